package access

import (
	"fmt"
	"slices"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// SURT returns the SURT key of a URL, the CDX API's surtkey
// (archive.Surt) of its canonical form: scheme dropped, a leading "www."
// (or "www2.") dropped, host labels reversed and comma-separated, a
// non-default port kept, then ")", the path and the query arguments
// sorted, all lower case. A URL without a scheme is read as http. Canonical URLs
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
	if k, ok := fastSURT(c); ok {
		return k, nil
	}
	return archive.Surt(c), nil
}

// fastSURT keys a URL already in canonical form (http(s)://host[:port]
// then "/" or nothing, lower-case host, default port dropped) as
// archive.Surt does, without its regexp and URL parse; other forms (an
// IPv6 host, user info) report false.
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
	if hp == "" || strings.ContainsAny(hp, "@[]%") || hasUpper(hp) {
		return "", false
	}
	if i := strings.IndexByte(path, '#'); i >= 0 {
		path = path[:i]
	}
	query := ""
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	if path == "" {
		path = "/"
	}
	host, port := hp, ""
	if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		host, port = hp[:i], hp[i:]
	}
	host = stripWWW(host)
	var b strings.Builder
	b.Grow(len(u))
	for host != "" {
		i := strings.LastIndexByte(host, '.')
		b.WriteString(host[i+1:])
		if i < 0 {
			break
		}
		b.WriteByte(',')
		host = host[:i]
	}
	b.WriteString(port)
	b.WriteByte(')')
	writeLower(&b, path)
	if query != "" {
		args := strings.Split(strings.ToLower(query), "&")
		slices.Sort(args)
		b.WriteByte('?')
		b.WriteString(strings.Join(args, "&"))
	}
	return b.String(), true
}

// stripWWW drops a leading "www." or "www<digits>.".
func stripWWW(h string) string {
	if !strings.HasPrefix(h, "www") {
		return h
	}
	i := 3
	for i < len(h) && '0' <= h[i] && h[i] <= '9' {
		i++
	}
	if i < len(h) && h[i] == '.' {
		return h[i+1:]
	}
	return h
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
