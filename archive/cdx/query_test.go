package cdx

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestStoreRoundTrip: a query survives the translation to the store's
// terms and back; a store query that names no field or two, is too long
// or ends before it starts is refused.
func TestStoreRoundTrip(t *testing.T) {
	for _, q := range []Query{
		{URL: "http://h.example/a", Match: MatchExact},
		{URL: "http://h.example/", Match: MatchPrefix, From: t0},
		{URL: "h.example", Match: MatchHost, To: t0},
		{URL: "h.example", Match: MatchDomain},
		{URL: "example,h)/a", Match: MatchSURT},
		{Match: MatchAll, Filter: archive.Filter{Regex: ".*a", Type: "image/*", Status: 200, Latest: true, Sample: 10, Part: 2, Parts: 3}},
	} {
		got, err := FromStore(q.Store())
		if err != nil || got != q {
			t.Errorf("%+v came back as %+v, %v", q, got, err)
		}
	}
	for _, aq := range []archive.Query{
		{},
		{Host: "h.example", Prefix: "http://h.example/"},
		{URL: "http://h.example/" + strings.Repeat("a", 1<<16)},
		{Host: "h.example", From: t0, To: t0.Add(-time.Second)},
		{All: true, Host: "h.example"},
		{Domain: "h.example", SURT: "example,h)"},
		{All: true, Filter: archive.Filter{Part: 3, Parts: 2}},
	} {
		if _, err := FromStore(aq); err == nil {
			t.Errorf("%.80v accepted", aq)
		}
	}
}

// TestContains: each match type selects what its doc says, within the
// time bounds.
func TestContains(t *testing.T) {
	v := archive.Version{URL: "http://www.h.example:8080/a/b", Time: t0}
	for _, c := range []struct {
		q    Query
		want bool
	}{
		{Query{URL: v.URL}, true},
		{Query{URL: "http://www.h.example:8080/a"}, false},
		{Query{URL: "http://www.h.example:8080/a", Match: MatchPrefix}, true},
		{Query{URL: "www.h.example:8080", Match: MatchHost}, true},
		{Query{URL: "www.h.example", Match: MatchHost}, false},
		{Query{URL: "h.example", Match: MatchDomain}, true},
		{Query{URL: "h.example:9", Match: MatchDomain}, false},
		{Query{URL: "xh.example", Match: MatchDomain}, false},
		{Query{URL: v.URL, From: t0.Add(time.Second)}, false},
		{Query{URL: v.URL, To: t0.Add(-time.Second)}, false},
		{Query{URL: v.URL, From: t0, To: t0}, true},
		{Query{URL: "example,h:8080)/a", Match: MatchSURT}, true},
		{Query{URL: "example,h:8080)/b", Match: MatchSURT}, false},
		{Query{Match: MatchAll}, true},
		{Query{Match: MatchAll, Filter: archive.Filter{Regex: ".*/a/b"}}, true},
		{Query{Match: MatchAll, Filter: archive.Filter{Regex: "/a/b"}}, false}, // the whole URL must match
		{Query{Match: MatchAll, Filter: archive.Filter{Status: 404}}, true},    // no status: an export header
		{Query{Match: MatchAll, Filter: archive.Filter{Part: archive.PartOf(v.URL, 3), Parts: 3}}, true},
		{Query{Match: MatchAll, Filter: archive.Filter{Part: archive.PartOf(v.URL, 3)%3 + 1, Parts: 3}}, false},
	} {
		if got := c.q.Contains(v); got != c.want {
			t.Errorf("%+v contains %s: %v, want %v", c.q, v.URL, got, c.want)
		}
	}
	w := v
	w.Status, w.ContentType = 200, "text/html"
	for _, c := range []struct {
		f    archive.Filter
		want bool
	}{
		{archive.Filter{Status: 200}, true},
		{archive.Filter{Status: 404}, false},
		{archive.Filter{Type: "text/*"}, true},
		{archive.Filter{Type: "image/*"}, false},
	} {
		if got := (Query{Match: MatchAll, Filter: c.f}).Contains(w); got != c.want {
			t.Errorf("%+v contains a %d %s: %v, want %v", c.f, w.Status, w.ContentType, got, c.want)
		}
	}
}

// TestKeyRoundTrip: a resume key parses back as printed, escaped or
// unescaped once; anything else is refused with ErrKey.
func TestKeyRoundTrip(t *testing.T) {
	k := KeyOf(archive.Version{URL: "http://h.example/a?b=c%20d", Time: t0.Add(time.Nanosecond), Digest: id.OfString("x")})
	once, err := url.QueryUnescape(k.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{k.String(), once} {
		got, err := ParseKey(s)
		if err != nil || got != k {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", s, got, err, k)
		}
	}
	for _, s := range []string{"zz", "a b c", "a notatime c " + id.OfString("x").String(), strings.Repeat("a", 1<<17)} {
		if _, err := ParseKey(s); !errors.Is(err, ErrKey) {
			t.Errorf("ParseKey(%.40q): %v, want ErrKey", s, err)
		}
	}
	if a, b := KeyOf(archive.Version{URL: "http://a.example/", Time: t0}), k; a.Compare(b) >= 0 || b.Compare(a) <= 0 || a.Compare(a) != 0 {
		t.Errorf("keys out of order: %v, %v", a, b)
	}
}
