package canon

import (
	"fmt"
	"net/url"
	"strings"
)

// canonURL is a URL in canonical form with the offsets of its parts.
type canonURL struct {
	s         string
	schemeEnd int // s[:schemeEnd] is the scheme, followed by "://"
	hostEnd   int // s[schemeEnd+3:hostEnd] is the host and any port
	pathEnd   int // s[hostEnd:pathEnd] is the path; s[pathEnd:] is "" or '?' and the query
}

// url returns c as a *url.URL whose String() is c.s.
func (c canonURL) url() *url.URL {
	u := &url.URL{Scheme: c.s[:c.schemeEnd], Host: c.s[c.schemeEnd+3 : c.hostEnd]}
	p := c.s[c.hostEnd:c.pathEnd]
	u.Path = p
	if strings.IndexByte(p, '%') >= 0 {
		u.Path, _ = url.PathUnescape(p) // every '%' of p starts an escape
	}
	if u.EscapedPath() != p {
		u.RawPath = p
	}
	if c.pathEnd < len(c.s) {
		u.RawQuery = c.s[c.pathEnd+1:]
		u.ForceQuery = u.RawQuery == ""
	}
	return u
}

// parse puts raw into canonical form, resolving it against base when base
// is not nil. It follows the WHATWG URL Standard's basic URL parser for the
// two schemes it accepts, with the changes doc.go lists.
func parse(raw string, base *url.URL) (canonURL, error) {
	if len(raw) > MaxLen {
		return canonURL{}, fmt.Errorf("%w: %d bytes", ErrTooLong, len(raw))
	}
	s := trimInput(raw)
	var (
		b   []byte
		err error
	)
	scheme, rest, ok := cutScheme(s)
	switch {
	case ok && scheme == "":
		return canonURL{}, fmt.Errorf("%w: %.20q", ErrScheme, s[:strings.IndexByte(s, ':')])
	case ok && (base == nil || !strings.EqualFold(base.Scheme, scheme) || strings.HasPrefix(rest, "//")):
		b, err = appendAuthority(newBuf(scheme, len(rest)), scheme, rest)
	case ok:
		b, err = appendRelative(base, rest)
	case base == nil:
		return canonURL{}, fmt.Errorf("%w: %.40q", errRelative, raw)
	default:
		b, err = appendRelative(base, s)
	}
	if err != nil {
		return canonURL{}, err
	}
	if len(b) > MaxLen {
		return canonURL{}, fmt.Errorf("%w: %d bytes in canonical form", ErrTooLong, len(b))
	}
	c := canonURL{s: string(b), schemeEnd: len("http")}
	if c.s[4] == 's' {
		c.schemeEnd++
	}
	c.hostEnd = c.schemeEnd + 3 + strings.IndexByte(c.s[c.schemeEnd+3:], '/')
	c.pathEnd = len(c.s)
	if i := strings.IndexByte(c.s[c.hostEnd:], '?'); i >= 0 {
		c.pathEnd = c.hostEnd + i
	}
	return c, nil
}

// trimInput removes leading and trailing C0 controls and spaces, and every
// tab and newline, as browsers do before parsing a URL.
func trimInput(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	s = s[i:j]
	i = 0
	for i < len(s) && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
		i++
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// cutScheme splits s after its scheme. ok reports whether s starts with a
// scheme; scheme is then "http" or "https" (lower case), or "" for any
// other scheme.
func cutScheme(s string) (scheme, rest string, ok bool) {
	if s == "" || !isAlpha(s[0]) {
		return "", s, false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlpha(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
		case c == ':':
			switch {
			case strings.EqualFold(s[:i], "http"):
				return "http", s[i+1:], true
			case strings.EqualFold(s[:i], "https"):
				return "https", s[i+1:], true
			}
			return "", s[i+1:], true
		default:
			return "", s, false
		}
	}
	return "", s, false
}

func isAlpha(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// newBuf returns a buffer holding scheme and "://", with room for about n
// more bytes.
func newBuf(scheme string, n int) []byte {
	b := make([]byte, 0, len(scheme)+3+n+8)
	b = append(b, scheme...)
	return append(b, "://"...)
}

// appendAuthority appends the host, port, path and query of rest, the part
// of a URL after "scheme:", to b, which ends in "scheme://". Any number of
// slashes and backslashes may come first, as in the standard's "special
// authority ignore slashes state".
func appendAuthority(b []byte, scheme, rest string) ([]byte, error) {
	rest = strings.TrimLeft(rest, `/\`)
	end := 0
	for end < len(rest) && rest[end] != '/' && rest[end] != '\\' && rest[end] != '?' && rest[end] != '#' {
		end++
	}
	hp := rest[:end]
	if at := strings.LastIndexByte(hp, '@'); at >= 0 {
		hp = hp[at+1:] // the user information is dropped
		if hp == "" {
			return nil, fmt.Errorf("%w: user information without a host", ErrNoHost)
		}
	}
	b, err := appendHostPort(b, scheme, hp)
	if err != nil {
		return nil, err
	}
	rest = rest[end:]
	if rest != "" && (rest[0] == '/' || rest[0] == '\\') {
		rest = rest[1:]
	}
	b, rest = appendPath(b, len(b), rest)
	return appendQuery(b, rest), nil
}

// appendRelative appends the resolution of ref (without its scheme, if it
// had base's) against base, following the standard's "relative state".
// base is put into canonical form on the way, so that the result is
// canonical whatever base is.
func appendRelative(base *url.URL, ref string) ([]byte, error) {
	var scheme string
	switch {
	case strings.EqualFold(base.Scheme, "http"):
		scheme = "http"
	case strings.EqualFold(base.Scheme, "https"):
		scheme = "https"
	default:
		return nil, fmt.Errorf("base: %w: %q", ErrScheme, base.Scheme)
	}
	if len(ref) > 1 && (ref[0] == '/' || ref[0] == '\\') && (ref[1] == '/' || ref[1] == '\\') {
		return appendAuthority(newBuf(scheme, len(ref)), scheme, ref)
	}
	b := newBuf(scheme, len(base.Host)+len(base.Path)+len(base.RawQuery)+len(ref))
	b, err := appendHostPort(b, scheme, base.Host)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	start := len(b)
	if ref != "" && (ref[0] == '/' || ref[0] == '\\') {
		b, ref = appendPath(b, start, ref[1:])
		return appendQuery(b, ref), nil
	}
	b, _ = appendPath(b, start, strings.TrimPrefix(base.EscapedPath(), "/"))
	switch {
	case ref == "" || ref[0] == '#':
		if base.ForceQuery || base.RawQuery != "" {
			b = append(b, '?')
			b = appendEscaped(b, base.RawQuery, &queryLiteral)
		}
		return b, nil
	case ref[0] != '?':
		b = shorten(b, start)
		b, ref = appendPath(b, start, ref)
	}
	return appendQuery(b, ref), nil
}

// appendPath appends the segments of p, the path after its first slash, to
// the path b[start:], resolving dot segments (also written %2e) as the
// standard's "path state" does; '\' separates segments as '/' does. It
// returns what follows the path in p: "" or a query or fragment.
func appendPath(b []byte, start int, p string) ([]byte, string) {
	for {
		i := 0
		for i < len(p) && p[i] != '/' && p[i] != '\\' && p[i] != '?' && p[i] != '#' {
			i++
		}
		seg := p[:i]
		slash := i < len(p) && (p[i] == '/' || p[i] == '\\')
		switch {
		case isDoubleDot(seg):
			b = shorten(b, start)
			if !slash {
				b = append(b, '/')
			}
		case isSingleDot(seg):
			if !slash {
				b = append(b, '/')
			}
		default:
			b = append(b, '/')
			b = appendEscaped(b, seg, &pathLiteral)
		}
		if !slash {
			return b, p[i:]
		}
		p = p[i+1:]
	}
}

// shorten removes the last segment of the path b[start:].
func shorten(b []byte, start int) []byte {
	for i := len(b) - 1; i >= start; i-- {
		if b[i] == '/' {
			return b[:i]
		}
	}
	return b
}

func isSingleDot(s string) bool {
	return s == "." || len(s) == 3 && s[0] == '%' && s[1] == '2' && s[2]|0x20 == 'e'
}

func isDoubleDot(s string) bool {
	switch len(s) {
	case 2:
		return s == ".."
	case 4:
		return isSingleDot(s[:1]) && isSingleDot(s[1:]) || isSingleDot(s[:3]) && isSingleDot(s[3:])
	case 6:
		return isSingleDot(s[:3]) && isSingleDot(s[3:])
	}
	return false
}

// appendQuery appends the query of rest, which is "" or starts with '?'
// (a query) or '#' (a fragment, dropped).
func appendQuery(b []byte, rest string) []byte {
	if rest == "" || rest[0] != '?' {
		return b
	}
	q := rest[1:]
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q = q[:i]
	}
	b = append(b, '?')
	return appendEscaped(b, q, &queryLiteral)
}
