package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestFuzzyRules checks every rule of fuzzy.json on its examples: with
// all the rules, each example is held the same resource or not as it
// says; without the rule, an example marked same is not (the rule is
// what matches it).
func TestFuzzyRules(t *testing.T) {
	rules := defaultFuzzy.rules
	if len(rules) < 4 {
		t.Fatalf("%d rules", len(rules))
	}
	for i, r := range rules {
		if len(r.Examples) == 0 {
			t.Errorf("rule %q has no examples", r.Name)
		}
		others, err := newFuzzyRules(append(append([]fuzzyRule{}, rules[:i]...), rules[i+1:]...))
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range r.Examples {
			if got := defaultFuzzy.same(ex.Request, ex.Capture); got != ex.Same {
				t.Errorf("rule %q: same(%s, %s) = %v", r.Name, ex.Request, ex.Capture, got)
			}
			if ex.Same && others.same(ex.Request, ex.Capture) {
				t.Errorf("rule %q: %s and %s are the same without the rule", r.Name, ex.Request, ex.Capture)
			}
		}
	}
	if _, err := parseFuzzyRules([]byte(`{"rules":[{"name":"x","value":"("}]}`)); err == nil {
		t.Error("a bad value pattern was accepted")
	}
}

// fuzzyArchive holds captures of a few paths with and without queries.
func fuzzyArchive(t *testing.T) *fakeArchive {
	a := newFake()
	a.add(t, "http://example.com/_static/pydoctheme.css?2022.1", "20220101000000", 200, "text/css", "body{color:navy}")
	a.add(t, "http://example.com/s.css?v=1", "20220101000000", 200, "text/css", "s v1")
	a.add(t, "http://example.com/app.js?ver=6.4", "20220101000000", 200, "text/javascript", "app")
	a.add(t, "http://example.com/page", "20220101000000", 200, "text/html", "<p>the page</p>")
	a.add(t, "http://example.com/search?q=a&lang=en", "20220101000000", 200, "text/html", "<p>results for a</p>")
	a.add(t, "http://example.com/search?q=b&lang=en", "20220101000000", 200, "text/html", "<p>results for b</p>")
	a.add(t, "http://example.com/search?q=b&lang=fr", "20220101000000", 200, "text/html", "<p>résultats pour b</p>")
	a.add(t, "http://example.com/feed?t=1641000000", "20211231000000", 200, "application/json", "old feed")
	a.add(t, "http://example.com/feed?t=1641081600", "20220102000000", 200, "application/json", "new feed")
	a.add(t, "http://example.com/x.css/y?v=1", "20220101000000", 200, "text/css", "another path")
	a.add(t, "http://example.com/x.cs?v=1", "20220101000000", 200, "text/css", "another path")
	a.add(t, "http://example.com/x.css2", "20220101000000", 200, "text/css", "another path")
	return a
}

// TestFuzzyReplay: a URL without a capture of its own replays the capture
// of the same path with the most similar query, says so in FuzzyHeader
// and in the banner's JSON, and never a capture of another path; an
// exact capture is served as it is.
func TestFuzzyReplay(t *testing.T) {
	a := fuzzyArchive(t)
	s := newServer(t, &listingArchive{fakeArchive: a})
	for _, tc := range []struct{ url, body, fuzzy string }{
		{"http://example.com/_static/pydoctheme.css?2023.1", "body{color:navy}", "http://example.com/_static/pydoctheme.css?2022.1"},
		{"http://example.com/_static/pydoctheme.css", "body{color:navy}", "http://example.com/_static/pydoctheme.css?2022.1"},
		{"http://example.com/s.css?v=2", "s v1", "http://example.com/s.css?v=1"},
		{"http://example.com/app.js", "app", "http://example.com/app.js?ver=6.4"},
		{"http://example.com/page?utm_source=x&fbclid=1", "<p>the page</p>", "http://example.com/page"},
		{"http://example.com/search?lang=en&q=b&gclid=7", "<p>results for b</p>", "http://example.com/search?q=b&lang=en"},
		{"http://example.com/search?q=b", "<p>results for b</p>", "http://example.com/search?q=b&lang=en"},
		{"http://example.com/search?q=c&lang=fr", "<p>résultats pour b</p>", "http://example.com/search?q=b&lang=fr"},
		{"http://example.com/feed?t=1641090000", "new feed", "http://example.com/feed?t=1641081600"},
		{"http://example.com/search?q=a&lang=en", "<p>results for a</p>", ""},
	} {
		w := get(t, s, "/web/20220103000000id_/"+tc.url)
		if w.Code != 200 || w.Body.String() != tc.body {
			t.Errorf("%s: %d %q, want %q", tc.url, w.Code, w.Body, tc.body)
		}
		if got := w.Header().Get(FuzzyHeader); got != tc.fuzzy {
			t.Errorf("%s: %s %q, want %q", tc.url, FuzzyHeader, got, tc.fuzzy)
		}
	}
	for _, u := range []string{"http://example.com/x.css?v=9", "http://example.com/x.css", "http://example.com/nothing?v=1"} {
		if w := get(t, s, "/web/20220103000000id_/"+u); w.Code != http.StatusNotFound || w.Header().Get(FuzzyHeader) != "" {
			t.Errorf("%s: %d %s %q, want a 404: only another path has captures", u, w.Code, FuzzyHeader, w.Header().Get(FuzzyHeader))
		}
	}
	// The framed page and the banner's JSON say it too.
	w := getUI(t, s, "/web/20220103000000/http://example.com/s.css?v=2")
	if w.Code != 200 || w.Header().Get(FuzzyHeader) != "http://example.com/s.css?v=1" {
		t.Errorf("frame: %d %s %q", w.Code, FuzzyHeader, w.Header().Get(FuzzyHeader))
	}
	w = getUI(t, s, "/api/banner?url=http://example.com/s.css%3Fv%3D2&ts=20220103000000")
	var b bannerData
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil || b.Fuzzy != "http://example.com/s.css?v=1" || b.URL != "http://example.com/s.css?v=2" {
		t.Errorf("banner: %d %s (%v)", w.Code, w.Body, err)
	}
	if n := s.Stats().Fuzzy; n != 11 {
		t.Errorf("Stats.Fuzzy = %d, want 11", n)
	}
	// Without a Lister only the URL without its query is a candidate.
	plain := newServer(t, a)
	if w := get(t, plain, "/web/20220103000000id_/http://example.com/page?utm_campaign=y"); w.Code != 200 || w.Header().Get(FuzzyHeader) != "http://example.com/page" {
		t.Errorf("without a Lister: %d %q", w.Code, w.Header().Get(FuzzyHeader))
	}
}

// BenchmarkFuzzyMiss measures a replay of a URL without a capture of its
// own on a gateway over an in-memory archive whose path has n captures
// with other queries (the fuzzy match's work: one Get, one Versions, one
// List of up to maxFuzzyVersions, the scoring, the Get of the match), and
// of a URL whose path has none (a 404 after the same calls).
func BenchmarkFuzzyMiss(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		a := newFake()
		for i := range n {
			a.add(b, fmt.Sprintf("http://example.com/search?q=w%d&lang=en&page=%d", i, i%7), "20220101000000", 200, "text/html", "<p>results</p>")
		}
		s := newServer(b, &listingArchive{fakeArchive: a})
		for _, tc := range []struct {
			name, url string
			code      int
		}{
			{"match", "http://example.com/search?page=3&q=none&lang=en&utm_source=x", 200},
			{"none", "http://example.com/other?q=x", 404},
		} {
			b.Run(fmt.Sprintf("%s/candidates=%d", tc.name, n), func(b *testing.B) {
				start := time.Now()
				for b.Loop() {
					if w := get(b, s, "/web/20220103000000id_/"+tc.url); w.Code != tc.code {
						b.Fatalf("%d", w.Code)
					}
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/replay")
			})
		}
	}
}
