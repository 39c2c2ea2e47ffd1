package access

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/herod-archive/herod/internal/canon"
)

// SURT returns the SURT key of a URL: scheme dropped, a leading "www."
// dropped, host labels reversed and comma-separated (an IP address kept
// as is), a non-default port kept, then ")" and the path and query, all
// lower case. A URL without a scheme is read as http. Canonical URLs
// (herod's stored form) take a fast path that does not parse them.
func SURT(raw string) (string, error) {
	if k, ok := fastSURT(raw); ok {
		return k, nil
	}
	u := raw
	if !strings.Contains(u, "://") {
		if i := strings.IndexByte(u, ':'); i >= 0 && (i+1 == len(u) || u[i+1] < '0' || u[i+1] > '9') {
			return "", fmt.Errorf("access: surt of %q: not an http(s) URL", raw)
		}
		u = "http://" + u
	}
	c, err := canon.Canonical(u)
	if err != nil {
		return "", fmt.Errorf("access: surt of %q: %w", raw, err)
	}
	k, ok := fastSURT(c)
	if !ok {
		return "", fmt.Errorf("access: surt of %q: not an http(s) URL", raw)
	}
	return k, nil
}

// fastSURT keys a URL already in canonical form: http(s)://host[:port]
// followed by "/" or nothing, lower-case host, default port dropped.
func fastSURT(u string) (string, bool) {
	var rest string
	switch {
	case strings.HasPrefix(u, "http://"):
		rest = u[len("http://"):]
	case strings.HasPrefix(u, "https://"):
		rest = u[len("https://"):]
	default:
		return "", false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	hp, path := rest[:end], rest[end:]
	if hp == "" || strings.ContainsAny(hp, "@ \t") || hasUpper(hp) {
		return "", false
	}
	if i := strings.IndexByte(path, '#'); i >= 0 {
		path = path[:i]
	}
	if path == "" || path[0] == '?' {
		path = "/" + path
	}
	host, port := hp, ""
	if strings.HasPrefix(hp, "[") {
		i := strings.IndexByte(hp, ']')
		if i < 0 {
			return "", false
		}
		host, port = hp[:i+1], hp[i+1:]
	} else if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		host, port = hp[:i], hp[i:]
	}
	var b strings.Builder
	b.Grow(len(u))
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		b.WriteString(host)
	} else {
		host = strings.TrimPrefix(host, "www.")
		for host != "" {
			i := strings.LastIndexByte(host, '.')
			b.WriteString(host[i+1:])
			if i < 0 {
				break
			}
			b.WriteByte(',')
			host = host[:i]
		}
	}
	b.WriteString(port)
	b.WriteByte(')')
	writeLower(&b, path)
	return b.String(), true
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func writeLower(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
}
