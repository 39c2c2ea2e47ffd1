package canon

import (
	"errors"
	"net/url"

	"github.com/herod-archive/herod/internal/id"
)

// MaxLen is the longest URL, in bytes, that Canonical accepts, and the
// longest canonical form it returns.
const MaxLen = 2048

// Errors returned by Canonical, Parse, Resolve and ResolveURL.
var (
	ErrScheme   = errors.New("canon: scheme is not http or https")
	ErrNoHost   = errors.New("canon: no host")
	ErrBadHost  = errors.New("canon: malformed host")
	ErrTooLong  = errors.New("canon: URL too long")
	ErrBadPort  = errors.New("canon: malformed port")
	errRelative = errors.New("canon: URL is not absolute")
)

// Canonical returns the canonical form of the absolute http(s) URL raw, as
// the package documentation defines it. It is idempotent:
// Canonical(Canonical(u)) == Canonical(u).
func Canonical(raw string) (string, error) {
	c, err := parse(raw, nil)
	return c.s, err
}

// Key returns the ring key of a URL: the SHA-1 of its canonical form.
func Key(raw string) (id.ID, error) {
	c, err := Canonical(raw)
	if err != nil {
		return id.ID{}, err
	}
	return id.OfString(c), nil
}

// Parse returns the canonical form of raw as a *url.URL: its String() is
// what Canonical returns, and so are the fields url.Parse would give that
// string. The URL is the caller's to change.
func Parse(raw string) (*url.URL, error) {
	c, err := parse(raw, nil)
	if err != nil {
		return nil, err
	}
	return c.url(), nil
}

// Resolve resolves the reference ref (a link as written in a document:
// relative or absolute) against base, which must be canonical (from Parse
// or ResolveURL), and returns the canonical form of the result.
func Resolve(base *url.URL, ref string) (string, error) {
	c, err := parse(ref, base)
	return c.s, err
}

// ResolveURL is Resolve returning the canonical URL parsed as well: u is
// what Parse(s) returns.
func ResolveURL(base *url.URL, ref string) (u *url.URL, s string, err error) {
	c, err := parse(ref, base)
	if err != nil {
		return nil, "", err
	}
	return c.url(), c.s, nil
}
