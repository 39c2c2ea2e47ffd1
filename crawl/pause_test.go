package crawl

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
)

// TestPausedSendsNothing: while Config.Paused reports a reason (a full
// disk) the crawler sends no request, robots.txt included, and says why
// in Stats; once it reports none the crawl goes on and fetches every page.
func TestPausedSendsNothing(t *testing.T) {
	s := newSite(t, map[string]string{"/": "<a href=/a>a</a>", "/a": "page a"})
	var paused atomic.Bool
	paused.Store(true)
	cfg := testConfig(&fakeClock{t: time.Now()})
	cfg.Paused = func() string {
		if paused.Load() {
			return "disk full"
		}
		return ""
	}
	a := newMemArchive()
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the crawler to pause", 10*time.Second, func() error {
		if c.Stats().Paused != "disk full" {
			return fmt.Errorf("not paused: %+v", c.Stats())
		}
		return nil
	})
	if rs := s.requests(""); len(rs) != 0 || c.Idle() {
		t.Fatalf("paused crawler: %d requests (%+v), idle %v", len(rs), rs, c.Idle())
	}
	paused.Store(false)
	waitIdle(t, c)
	if a.count(s.url("/")) != 1 || a.count(s.url("/a")) != 1 {
		t.Fatalf("after the pause: stored %v", a.urls())
	}
	if st := c.Stats(); st.Paused != "" {
		t.Fatalf("still paused: %q", st.Paused)
	}
}
