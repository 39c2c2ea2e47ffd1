package crawl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/testwait"
)

// blockingArchive holds every Put until release is closed (or the crawl
// is cancelled), so that a test can look at the crawler while pages are
// being processed after their connection was released.
type blockingArchive struct {
	*memArchive
	entered chan string   // receives the URL of each Put as it starts
	release chan struct{} // closed to let the Puts through
}

func (b *blockingArchive) Put(ctx context.Context, c archive.Capture) (archive.Version, bool, error) {
	b.entered <- c.URL
	select {
	case <-b.release:
		return b.memArchive.Put(ctx, c)
	case <-ctx.Done():
		return archive.Version{}, false, ctx.Err()
	}
}

// TestIdleWhileProcessing: a page whose response was read, and whose
// connection went back to the pool, still counts as in flight until its
// archive Put (and link forwarding) finished, so Idle stays false; the
// next request to the host goes out meanwhile.
func TestIdleWhileProcessing(t *testing.T) {
	s := newSite(t, map[string]string{"/a": "page a", "/b": "page b"})
	a := &blockingArchive{memArchive: newMemArchive(), entered: make(chan string, 2), release: make(chan struct{})}
	cfg := testConfig(newClock())
	cfg.HostConns = 1
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/a"), s.url("/b")}); err != nil {
		t.Fatal(err)
	}
	// With one connection, both Puts can only be waiting at once if the
	// second request went out while the first page was being processed.
	for range 2 {
		select {
		case <-a.entered:
		case <-time.After(20 * time.Second):
			t.Fatalf("pages not fetched: %+v", c.Stats())
		}
	}
	st := c.Stats()
	if c.Idle() || st.InFlight != 2 || st.FetchedToday != 2 {
		t.Fatalf("while two pages are processed: idle %v, stats %+v", c.Idle(), st)
	}
	if got := len(a.urls()); got != 0 {
		t.Fatalf("%d pages stored before the Puts returned", got)
	}
	close(a.release)
	waitIdle(t, c)
	if got := len(a.urls()); got != 2 {
		t.Fatalf("stored %d pages, want 2", got)
	}
	if st := c.Stats(); st.InFlight != 0 || st.NewVersions != 2 {
		t.Fatalf("after processing: %+v", st)
	}
}

// TestCloseWhileProcessingLosesNothing: Close while pages are being
// processed (their bodies read, their Puts not finished) leaves their
// queue entries in place, and the next start fetches and stores them.
func TestCloseWhileProcessingLosesNothing(t *testing.T) {
	s := newSite(t, map[string]string{"/a": "page a", "/b": "page b", "/c": "page c"})
	a := &blockingArchive{memArchive: newMemArchive(), entered: make(chan string, 3), release: make(chan struct{})}
	cfg := testConfig(newClock())
	cfg.HostConns = 1
	dir := t.TempDir()
	c, _ := startCrawler(t, dir, cfg, a)
	if err := c.Add(context.Background(), []string{s.url("/a"), s.url("/b"), s.url("/c")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.entered:
	case <-time.After(20 * time.Second):
		t.Fatalf("no page fetched: %+v", c.Stats())
	}
	if err := c.Close(); err != nil { // the pending Puts are cancelled
		t.Fatal(err)
	}
	if got := len(a.urls()); got != 0 {
		t.Fatalf("%d pages stored by cancelled Puts", got)
	}
	mem := newMemArchive()
	c2, _ := startCrawler(t, dir, cfg, mem)
	waitIdle(t, c2)
	if got := len(mem.urls()); got != 3 {
		t.Fatalf("stored %d pages after restart, want 3: an entry was dropped while its page was processed", got)
	}
}

// TestProcessingBoundedByBodyBytes: pages waiting in processing (here on
// Puts that do not return) hold their bodies' bytes against
// procBodyFactor*MaxBody, so no more of them start processing than fit,
// although processing slots would allow many more; the rest follow as
// room is made.
func TestProcessingBoundedByBodyBytes(t *testing.T) {
	const maxBody = 1000
	big := strings.Repeat("x", maxBody) // each page holds a whole MaxBody
	pages := map[string]string{}
	for i := range 10 {
		pages[fmt.Sprintf("/p%d", i)] = big
	}
	s := newSite(t, pages)
	var urls []string
	for p := range pages {
		urls = append(urls, s.url(p))
	}
	a := &blockingArchive{memArchive: newMemArchive(), entered: make(chan string, len(urls)), release: make(chan struct{})}
	cfg := testConfig(newClock())
	cfg.MaxBody = maxBody
	cfg.HostConns = 1
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	if err := c.Add(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	for range procBodyFactor {
		select {
		case <-a.entered:
		case <-time.After(20 * time.Second):
			t.Fatalf("pages not fetched: %+v", c.Stats())
		}
	}
	// Give an unbounded crawler time to start processing more pages.
	select {
	case u := <-a.entered:
		t.Fatalf("%s started processing while %d whole-MaxBody pages were: over the body budget", u, procBodyFactor)
	case <-time.After(300 * time.Millisecond):
	}
	close(a.release)
	waitIdle(t, c)
	if got := len(a.urls()); got != len(urls) {
		t.Fatalf("stored %d pages, want %d", got, len(urls))
	}
}

// TestLinksForwardedBeforeStoreEnds: a page's new links are forwarded
// while its version is still being stored (a Put waits for its index
// group's sync), so the crawl's frontier does not wait for the disk; the
// crawl state is written only once the version is stored.
func TestLinksForwardedBeforeStoreEnds(t *testing.T) {
	s := newSite(t, map[string]string{"/": links(nil, "/a", "/b")})
	a := &blockingArchive{memArchive: newMemArchive(), entered: make(chan string, 1), release: make(chan struct{})}
	c, f := startCrawler(t, t.TempDir(), testConfig(newClock()), a)
	f.mu.Lock()
	f.c = nil // record only
	f.mu.Unlock()
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.entered:
	case <-time.After(20 * time.Second):
		t.Fatalf("page not stored: %+v", c.Stats())
	}
	want := []string{s.url("/a"), s.url("/b")}
	testwait.For(t, "the links forwarded while the Put waits", 20*time.Second, func() error {
		if !slices.Equal(f.all(), want) {
			return fmt.Errorf("forwarded %v while the Put waits, want %v", f.all(), want)
		}
		return nil
	})
	if _, err := a.State(context.Background(), s.url("/")); err == nil {
		t.Fatal("crawl state written before the version was stored")
	}
	close(a.release)
	waitIdle(t, c)
	st, err := a.State(context.Background(), s.url("/"))
	if err != nil || !slices.Equal(st.Outlinks, want) {
		t.Fatalf("state after the store: %+v, %v", st, err)
	}
}
