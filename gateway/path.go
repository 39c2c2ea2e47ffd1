package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// Kind says what a /web/ path asks for.
type Kind int

// Kinds of /web/ requests.
const (
	KindReplay Kind = iota // /web/<ts>[mod]/<url>: a dated capture
	KindLatest             // /web/<url>: the newest capture
	KindDates              // /web/*/<url>: the list of dates
	KindPrefix             // /web/*/<prefix>*: the URLs under a prefix
)

// Modifier names (pywb's) that change how a capture is served.
const (
	ModRaw    = "id_" // payload byte for byte, no rewriting, no banner
	ModIframe = "if_" // rewritten, no banner: a document inside a frame
	ModFrame  = "fr_" // same as ModIframe
	ModMain   = "mp_" // same as no modifier: the page a reader opened
	// ModWorker serves a worker's script, which the replay script asks
	// for with it: rewritten as any script but for its location, the
	// worker's own (Rewriter.Worker).
	ModWorker = "wk_"
)

// maxPathLen bounds the /web/ path the gateway accepts: a canonical URL of
// canon.MaxLen plus room for the timestamp, modifier and escaping.
const maxPathLen = 3*canon.MaxLen + 64

// ErrBadPath reports a /web/ path that names no archived URL.
var ErrBadPath = errors.New("gateway: malformed archive path")

// Target is a parsed /web/ path.
type Target struct {
	Kind Kind
	TS   string    // timestamp digits as written; "" unless KindReplay
	Time time.Time // ParseTimestamp(TS); zero unless KindReplay
	Mod  string    // modifier such as "id_"; "" for the default
	URL  string    // canonical URL (the canonical prefix for KindPrefix)
}

// ParseWebPath parses the part of a request path after "/web/" (escaped, as
// in url.URL.EscapedPath) and the request's raw query, which belongs to the
// archived URL.
func ParseWebPath(rest, rawQuery string) (Target, error) {
	if len(rest)+len(rawQuery) > maxPathLen {
		return Target{}, fmt.Errorf("%w: %d bytes", ErrBadPath, len(rest)+len(rawQuery))
	}
	target := rest
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	var t Target
	head, tail, found := strings.Cut(rest, "/")
	switch {
	case found && (head == "*" || (strings.HasSuffix(head, "*") && isTimestamp(strings.TrimSuffix(head, "*")))):
		t.Kind = KindDates
		target = strings.TrimPrefix(target, head+"/")
	case found && isTimestampMod(head):
		t.Kind = KindReplay
		t.TS, t.Mod = splitMod(head)
		tm, err := ParseTimestamp(t.TS)
		if err != nil {
			return Target{}, fmt.Errorf("%w: %v", ErrBadPath, err)
		}
		t.Time = tm
		target = tail
		if rawQuery != "" {
			target += "?" + rawQuery
		}
	case found && isAllDigitsLike(head):
		// Looks like a timestamp but is not one (too long, stray letters
		// after digits): refuse instead of reading it as a host name.
		return Target{}, fmt.Errorf("%w: bad timestamp %.40q", ErrBadPath, head)
	default:
		t.Kind = KindLatest
	}
	if t.Kind != KindReplay && strings.HasSuffix(target, "*") {
		// Canonical form only lowercases, resolves dot segments and
		// gives an empty path its "/": the prefix selects the same URLs.
		t.Kind = KindPrefix
		p, err := ArchivedURL(strings.TrimSuffix(target, "*"))
		if err != nil {
			return Target{}, err
		}
		t.URL = p
		return t, nil
	}
	u, err := ArchivedURL(target)
	if err != nil {
		return Target{}, err
	}
	t.URL = u
	return t, nil
}

// ArchivedURL turns the URL part of a gateway path into canonical form, as
// Wayback does: "http:/x" (a slash collapsed by a proxy) and "x" (no scheme)
// both mean http://x; a percent-encoded "http%3A%2F%2F…" is decoded once.
// Schemes other than http and https are refused, but for the URL of a
// page's screenshot, archive.ScreenshotPrefix and the page's URL
// ("urn:view:http://x/", as Browsertrix and replayweb.page name it).
func ArchivedURL(raw string) (string, error) {
	if page, ok := archive.ScreenshotPage(strings.TrimLeft(strings.TrimSpace(raw), "/")); ok {
		p, err := ArchivedURL(page)
		if err != nil {
			return "", err
		}
		return archive.ScreenshotURL(p), nil
	}
	fixed, err := fixScheme(raw)
	if err != nil {
		return "", err
	}
	c, err := canon.Canonical(fixed)
	if err == nil {
		// Canonical is not a fixed point for a few hostile inputs (host
		// "..", a query ending in a space): insist on one, so that a URL
		// the gateway hands out parses back to itself.
		c, err = canon.Canonical(c)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadPath, err)
	}
	return c, nil
}

// fixScheme restores the scheme and "//" of a URL taken from a path.
func fixScheme(raw string) (string, error) {
	s := strings.TrimLeft(strings.TrimSpace(raw), "/")
	if s == "" {
		return "", fmt.Errorf("%w: no URL", ErrBadPath)
	}
	low := strings.ToLower(s)
	if strings.HasPrefix(low, "http%3a") || strings.HasPrefix(low, "https%3a") {
		if u, err := url.PathUnescape(s); err == nil {
			s, low = u, strings.ToLower(u)
		}
	}
	for _, scheme := range []string{"https:", "http:"} {
		if strings.HasPrefix(low, scheme) {
			return scheme + "//" + strings.TrimLeft(s[len(scheme):], "/"), nil
		}
	}
	if scheme, rest, ok := strings.Cut(s, ":"); ok && isScheme(scheme) && !startsWithDigit(rest) {
		return "", fmt.Errorf("%w: scheme %.20q is not http or https", ErrBadPath, scheme)
	}
	return "http://" + s, nil
}

// isScheme reports whether s has the syntax of a URL scheme (RFC 3986).
func isScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// isTimestampMod reports whether s is a timestamp optionally followed by a
// two-letter modifier and an underscore ("2014id_").
func isTimestampMod(s string) bool {
	ts, mod := splitMod(s)
	if mod == "" && len(ts) != len(s) {
		return false
	}
	return isTimestamp(ts)
}

// splitMod splits "2014id_" into "2014" and "id_".
func splitMod(s string) (ts, mod string) {
	if n := len(s); n >= 4 && s[n-1] == '_' && isLower(s[n-2]) && isLower(s[n-3]) {
		return s[:n-3], s[n-3:]
	}
	return s, ""
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }

// isAllDigitsLike reports whether s starts with 8 or more digits and has no
// dot: a would-be timestamp, never a host name.
func isAllDigitsLike(s string) bool {
	if strings.ContainsAny(s, ".:") || len(s) < 8 {
		return false
	}
	for i := 0; i < 8; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// webPath returns the gateway path that replays url at ts with mod.
func webPath(ts, mod, url string) string {
	return "/web/" + ts + mod + "/" + url
}
