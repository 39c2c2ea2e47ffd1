package canon

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/herod-archive/herod/internal/id"
)

// MaxLen is the longest URL, in bytes, that Canonical accepts.
const MaxLen = 2048

// Errors returned by Canonical and Resolve.
var (
	ErrScheme   = errors.New("canon: scheme is not http or https")
	ErrNoHost   = errors.New("canon: no host")
	ErrTooLong  = errors.New("canon: URL too long")
	ErrSyntax   = errors.New("canon: malformed URL")
	ErrBadPort  = errors.New("canon: malformed port")
	errRelative = errors.New("canon: URL is not absolute")
)

// Canonical returns the canonical form of the absolute http(s) URL raw.
func Canonical(raw string) (string, error) {
	u, err := Parse(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// Key returns the ring key of a URL: the SHA-1 of its canonical form.
func Key(raw string) (id.ID, error) {
	c, err := Canonical(raw)
	if err != nil {
		return id.ID{}, err
	}
	return id.OfString(c), nil
}

// Parse parses raw and returns it in canonical form as a *url.URL.
func Parse(raw string) (*url.URL, error) {
	if len(raw) > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLong, len(raw))
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if !u.IsAbs() {
		return nil, fmt.Errorf("%w: %q", errRelative, raw)
	}
	return normalize(u)
}

// Resolve resolves ref against base (an already canonical URL) and returns
// the canonical form of the result.
func Resolve(base *url.URL, ref string) (string, error) {
	_, s, err := ResolveURL(base, ref)
	return s, err
}

// ResolveURL is Resolve returning the canonical URL parsed as well: u is
// what Parse(s) returns.
func ResolveURL(base *url.URL, ref string) (u *url.URL, s string, err error) {
	ref = strings.TrimSpace(ref)
	if len(ref) > MaxLen {
		return nil, "", fmt.Errorf("%w: %d bytes", ErrTooLong, len(ref))
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	u, err = normalize(base.ResolveReference(r))
	if err != nil {
		return nil, "", err
	}
	s = u.String()
	if len(s) > MaxLen {
		return nil, "", fmt.Errorf("%w: %d bytes", ErrTooLong, len(s))
	}
	return u, s, nil
}

func normalize(u *url.URL) (*url.URL, error) {
	c := *u
	c.Scheme = strings.ToLower(c.Scheme)
	if c.Scheme != "http" && c.Scheme != "https" {
		return nil, fmt.Errorf("%w: %q", ErrScheme, c.Scheme)
	}
	if c.Opaque != "" {
		return nil, fmt.Errorf("%w: opaque URL", ErrSyntax)
	}
	host, port := c.Hostname(), c.Port()
	host = strings.TrimRight(strings.ToLower(host), ".")
	if host == "" {
		return nil, ErrNoHost
	}
	if port != "" {
		for _, r := range port {
			if r < '0' || r > '9' {
				return nil, fmt.Errorf("%w: %q", ErrBadPort, port)
			}
		}
		port = strings.TrimLeft(port, "0")
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("%w: %q", ErrBadPort, c.Port())
		}
	}
	if (c.Scheme == "http" && port == "80") || (c.Scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		c.Host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		c.Host = "[" + host + "]"
	} else {
		c.Host = host
	}
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	c.Path = cleanPath(c.Path)
	c.RawPath = ""
	c.ForceQuery = false
	c.RawQuery = escapeQuery(c.RawQuery)
	return &c, nil
}

// escapeQuery percent-encodes the bytes a query may not hold literally
// (spaces, controls, non-ASCII, a '%' not starting an escape), keeping
// valid escapes and everything else byte for byte. Without it a query
// ending in a space would lose the space when the URL is parsed again.
func escapeQuery(q string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '%' && i+2 < len(q) && isHex(q[i+1]) && isHex(q[i+2]):
			b.WriteByte(c)
		case c <= ' ' || c >= 0x7f || c == '%' || c == '"' || c == '<' || c == '>' || c == '\\' ||
			c == '^' || c == '`' || c == '{' || c == '|' || c == '}' || c == '#':
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// cleanPath resolves dot segments (RFC 3986 section 5.2.4) and keeps a
// trailing slash, which is significant to web servers.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	trailing := strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
	c := path.Clean(p)
	if trailing && c != "/" {
		c += "/"
	}
	return c
}
