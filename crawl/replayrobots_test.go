package crawl

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// TestReplayAllowed: the replay policy follows the site's current
// robots.txt as the crawler caches it (one fetch per RobotsTTL), lets
// through the URLs it allows, and lets everything through when the file
// is missing or the site answers an error.
func TestReplayAllowed(t *testing.T) {
	s := newSite(t, map[string]string{"/": "home"})
	s.mu.Lock()
	s.robots = &page{status: 200, ctype: "text/plain", body: "User-agent: herod\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n"}
	s.mu.Unlock()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	c, _ := startCrawler(t, t.TempDir(), testConfig(clock), newMemArchive())
	ctx := context.Background()
	check := func(path string, want bool) {
		t.Helper()
		ok, fetched, err := c.ReplayAllowed(ctx, s.url(path))
		if err != nil || ok != want {
			t.Errorf("%s: allowed %v (%v), want %v", path, ok, err, want)
		}
		if !fetched.Equal(clock.Now()) && !fetched.Before(clock.Now()) {
			t.Errorf("%s: fetched %v, after now", path, fetched)
		}
	}
	check("/private/a.html", false)
	check("/private", false)
	check("/public/b.html?x=1", true)
	if n := len(s.requests("/robots.txt")); n != 1 {
		t.Errorf("robots.txt fetched %d times, want once (cached)", n)
	}
	// The site lifts its exclusion; once the cached copy expires, the
	// new file holds.
	s.mu.Lock()
	s.robots = &page{status: 200, ctype: "text/plain", body: "User-agent: *\nAllow: /\n"}
	s.mu.Unlock()
	check("/private/a.html", false)
	clock.Add(DefaultRobotsTTL + time.Second)
	check("/private/a.html", true)
	// A site with no robots.txt, or one that answers 503, hides nothing.
	for _, st := range []int{404, 503} {
		s.mu.Lock()
		s.robots = &page{status: st, ctype: "text/plain", body: "User-agent: *\nDisallow: /\n"}
		s.mu.Unlock()
		clock.Add(DefaultRobotsTTL + time.Second)
		check("/private/a.html", true)
	}
	if _, _, err := c.ReplayAllowed(ctx, "ftp://example.com/x"); err == nil {
		t.Error("ftp URL: no error")
	}
}

// TestReplayAllowedInternal: a replay check never fetches from an address
// the crawler's network rules refuse; the capture stays shown.
func TestReplayAllowedInternal(t *testing.T) {
	s := newSite(t, map[string]string{"/": "home"})
	s.mu.Lock()
	s.robots = &page{status: 200, ctype: "text/plain", body: "User-agent: *\nDisallow: /\n"}
	s.mu.Unlock()
	cfg := testConfig(&fakeClock{t: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)})
	cfg.AllowPrivate = []netip.Prefix{}
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	ok, _, err := c.ReplayAllowed(context.Background(), s.url("/x"))
	if !ok || err != nil {
		t.Errorf("loopback site, private addresses refused: allowed %v err %v, want allowed", ok, err)
	}
	if n := len(s.requests("/robots.txt")); n != 0 {
		t.Errorf("robots.txt fetched %d times from a refused address", n)
	}
}
