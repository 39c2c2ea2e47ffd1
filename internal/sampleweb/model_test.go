package sampleweb

import (
	"bytes"
	"compress/gzip"
	"regexp"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/racebuild"
)

func TestRelative(t *testing.T) {
	tests := []struct{ dir, p, want string }{
		{"/", "/", "./"},
		{"/news/", "/", "../"},
		{"/", "/news/6.html", "news/6.html"},
		{"/news/", "/news/6.html", "6.html"},
		{"/news/", "/docs/1.html", "../docs/1.html"},
		{"/news/", "/news/6.html?session=a/b", "6.html?session=a/b"},
		{"/docs/", "/img/1.gif", "../img/1.gif"},
	}
	for _, tt := range tests {
		if got := relative(tt.dir, tt.p); got != tt.want {
			t.Errorf("relative(%q, %q) = %q, want %q", tt.dir, tt.p, got, tt.want)
		}
	}
}

func TestPagePathRoundTrip(t *testing.T) {
	for n := range 2000 {
		got, ok := parsePagePath(pagePath(n))
		if !ok || got != n {
			t.Fatalf("parsePagePath(pagePath(%d)) = %d, %v", n, got, ok)
		}
	}
	for _, p := range []string{"", "/index.html", "/news/7.html", "/news/06.html", "/news/-6.html", "/news/6.htm", "/news/6.html/", "/x/6.html", "/news/", "/news/0.html"} {
		if n, ok := parsePagePath(p); ok {
			t.Errorf("parsePagePath(%q) = %d, true", p, n)
		}
	}
}

// TestBodyChangesExactlyOnEvents renders every page on consecutive days and
// checks that a body differs from the day before exactly when the model
// says it last changed today. This is also what makes the body cache,
// keyed by the last-change day, sound.
func TestBodyChangesExactlyOnEvents(t *testing.T) {
	m := newModel(11, 2, 60, 2, false)
	bases := []string{"http://h0", "http://h1"}
	days := 20
	if testing.Short() || racebuild.Enabled {
		days = 6
	}
	prev := make(map[[2]int][]byte)
	prevMod := make(map[[2]int]int)
	changes := 0
	for d := 0; d <= days; d++ {
		for h := range 2 {
			for n := range m.pageCount(h, d) {
				k := [2]int{h, n}
				s := m.state(h, n, d)
				body := m.renderPage(s, bases)
				if old, ok := prev[k]; ok {
					differs := !bytes.Equal(old, body)
					if differs != (s.lastMod == d) {
						t.Fatalf("host %d page %d day %d: body differs %v, lastMod %d", h, n, d, differs, s.lastMod)
					}
					if !differs && s.lastMod != prevMod[k] {
						t.Fatalf("host %d page %d day %d: same body, lastMod %d then %d", h, n, d, prevMod[k], s.lastMod)
					}
					if differs {
						changes++
					}
				} else if s.lastMod != d {
					t.Fatalf("host %d page %d born on day %d has lastMod %d", h, n, d, s.lastMod)
				}
				prev[k], prevMod[k] = body, s.lastMod
			}
		}
	}
	if changes < days {
		t.Errorf("only %d page changes over %d days", changes, days)
	}
}

// TestDeterminism starts two webs with the same seed and compares every
// body they serve, with each host's address replaced by its index.
func TestDeterminism(t *testing.T) {
	a := startWeb(t, Config{Pages: 90, Seed: 42})
	b := startWeb(t, Config{Pages: 90, Seed: 42})
	c := startWeb(t, Config{Pages: 90, Seed: 43})
	norm := func(w *Web, body []byte) string {
		s := string(body)
		for i, seed := range w.Seeds() {
			s = strings.ReplaceAll(s, strings.TrimSuffix(seed, "/"), "HOST"+string(rune('0'+i)))
		}
		return s
	}
	for _, d := range []int{0, 3} {
		a.SetDay(d)
		b.SetDay(d)
		ua, ub := a.Reachable(d), b.Reachable(d)
		if len(ua) != len(ub) {
			t.Fatalf("day %d: %d vs %d reachable URLs", d, len(ua), len(ub))
		}
		for i := range ua {
			_, ba := get(t, "GET", ua[i], nil)
			_, bb := get(t, "GET", ub[i], nil)
			if norm(a, ba) != norm(b, bb) {
				t.Fatalf("day %d: %s and %s differ", d, ua[i], ub[i])
			}
		}
	}
	_, ba := get(t, "GET", a.Seeds()[0], nil)
	_, bc := get(t, "GET", c.Seeds()[0], nil)
	if norm(a, ba) == norm(c, bc) {
		t.Errorf("seeds 42 and 43 serve the same root page")
	}
}

var (
	cssURL     = regexp.MustCompile(`url\("?([^")]+)"?\)`)
	anchorHref = regexp.MustCompile(`<a href="([^"]*)"`)
)

// TestContentRequirements checks the default web against what the demo and
// the end-to-end tests need from it.
func TestContentRequirements(t *testing.T) {
	w := startWeb(t, Config{})
	reach := w.Reachable(0)
	inReach := make(map[string]bool)
	for _, u := range append(w.Seeds(), reach...) {
		inReach[u] = true
		if c, err := canon.Canonical(u); err != nil || c != u {
			t.Errorf("%s is not canonical: %q, %v", u, c, err)
		}
	}
	var html, images, css, cssRefs, js, cross, missing, moved, private, dynamic, iframes int
	var raw, packed int
	minSize, maxSize := 1<<30, 0
	for _, u := range reach {
		status, body := w.Body(0, u)
		switch {
		case status == 404:
			missing++
			continue
		case status == 301:
			moved++
			continue
		case strings.Contains(u, "/img/"):
			images++
		case strings.HasSuffix(u, ".css"):
			css++
			base, err := canon.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range cssURL.FindAllSubmatch(body, -1) {
				cssRefs++
				target, err := canon.Resolve(base, string(m[1]))
				if err != nil || !inReach[target] {
					t.Errorf("%s: url(%s) -> %s (%v) is not reachable as an <img>", u, m[1], target, err)
				}
			}
		case strings.HasSuffix(u, ".js"):
			js++
		default:
			html++
			if html%10 == 0 { // a sample: compression is slow under the race detector
				raw += len(body)
				var buf bytes.Buffer
				z := gzip.NewWriter(&buf)
				z.Write(body)
				z.Close()
				packed += buf.Len()
			}
			minSize, maxSize = min(minSize, len(body)), max(maxSize, len(body))
			if !bytes.Contains(body, []byte("<img src=")) || !bytes.Contains(body, []byte(`<link rel="stylesheet"`)) || !bytes.Contains(body, []byte("<script src=")) {
				t.Errorf("%s lacks images, stylesheets or scripts", u)
			}
			iframes += bytes.Count(body, []byte("<iframe src="))
			host := u[:strings.Index(u[7:], "/")+7]
			for _, m := range anchorHref.FindAllSubmatch(body, -1) {
				href := string(m[1])
				switch {
				case strings.HasPrefix(href, "http://") && !strings.HasPrefix(href, host):
					cross++
				case strings.Contains(href, disallowed):
					private++
				case strings.Contains(href, "?"):
					dynamic++
				}
			}
		}
	}
	ratio := float64(packed) / float64(raw)
	t.Logf("day 0: %d URLs, %d HTML (%d-%d bytes, gzip %.2f), %d images, %d css, %d js, %d 404, %d 301; links: %d cross-host, %d private, %d dynamic; %d iframes",
		len(reach), html, minSize, maxSize, ratio, images, css, js, missing, moved, cross, private, dynamic, iframes)
	checks := []struct {
		name string
		ok   bool
	}{
		{"at least 500 HTML pages", html >= 500},
		{"pages of 2 KB to 32 KB", minSize >= 2048 && maxSize <= 32<<10},
		{"text not trivially compressible", ratio > 0.3 && ratio < 0.6},
		{"images", images >= 3*10},
		{"stylesheets", css >= 3*2},
		{"stylesheets with url()", cssRefs >= css},
		{"scripts", js >= 3*2},
		{"cross-host links", cross >= 100},
		{"404 links", missing >= 3},
		{"one redirect per host", moved == 3},
		{"links into the disallowed prefix", private >= 10},
		{"dynamic links", dynamic >= 10},
		{"iframes", iframes >= 10},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("requirement failed: %s", c.name)
		}
	}
}

// TestDailyChanges checks that every day adds pages, changes texts and
// removes links.
func TestDailyChanges(t *testing.T) {
	m := newModel(1, 3, 600, 2, false)
	for d := 1; d <= 5; d++ {
		var texts, deaths int
		for h := range 3 {
			for n := range m.pageCount(h, d-1) {
				p := m.page(h, n)
				if r1, _ := m.textRevision(h, n, d); r1 > 0 {
					if r0, _ := m.textRevision(h, n, d-1); r1 != r0 {
						texts++
					}
				}
				for _, l := range p.inline {
					if l.death == d {
						deaths++
					}
				}
			}
		}
		if texts == 0 || deaths == 0 || m.pageCount(0, d) <= m.pageCount(0, d-1) {
			t.Errorf("day %d: %d text changes, %d link deaths, %d -> %d pages", d, texts, deaths, m.pageCount(0, d-1), m.pageCount(0, d))
		}
	}
}
