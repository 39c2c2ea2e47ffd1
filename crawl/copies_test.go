package crawl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/testwait"
)

// heldCopies is a CopyWaiter whose waits return what the test releases
// them with; a wait on a URL in never blocks until its context ends.
type heldCopies struct {
	mu      sync.Mutex
	waiting map[string]chan error
	never   map[string]bool
	n       int // the n of the last wait
}

func (h *heldCopies) WaitCopies(ctx context.Context, v archive.Version, n int) error {
	h.mu.Lock()
	h.n = n
	ch := make(chan error, 1)
	if !h.never[v.URL] {
		h.waiting[v.URL] = ch
	}
	h.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// held returns the URLs whose waits are under way.
func (h *heldCopies) held() map[string]chan error {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]chan error, len(h.waiting))
	for u, ch := range h.waiting {
		out[u] = ch
	}
	return out
}

// TestWriteCopies: with WriteCopies 2 a fetch that stores a new version
// is done only once its copy is confirmed (the crawler is not idle while
// one waits), the crawl of the other pages goes on meanwhile (every page
// is fetched while the first one's wait is held), and a wait that fails,
// or outlasts WriteCopiesWait, ends the fetch anyway, counted as
// KindWriteCopies.
func TestWriteCopies(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, map[string]string{
		"/": links(nil, "/a", "/b", "/c"), "/a": "<p>a</p>", "/b": "<p>b</p>", "/c": "<p>c</p>",
	})
	h := &heldCopies{waiting: map[string]chan error{}, never: map[string]bool{s.url("/c"): true}}
	cfg := testConfig(newClock())
	cfg.WriteCopies, cfg.Copies, cfg.WriteCopiesWait = 2, h, 200*time.Millisecond
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	// "/" and "/a", "/b" wait for their copies, all at once: the wait of
	// the first holds up no other fetch.
	testwait.For(t, "the three waits for copies", 20*time.Second, func() error {
		if len(h.held()) < 3 {
			return fmt.Errorf("waits under way: %v", h.held())
		}
		return nil
	})
	if c.Idle() {
		t.Fatal("idle while fetches wait for their copies")
	}
	held := h.held()
	held[s.url("/")] <- nil
	held[s.url("/a")] <- nil
	held[s.url("/b")] <- errors.New("one replica of two gave up")
	waitIdle(t, c)
	st := c.Stats()
	// "/b" failed, "/c" outlasted WriteCopiesWait.
	if st.ErrorsByKind[KindWriteCopies] != 2 || st.CopyWaits != 4 || st.NewVersions != 4 || h.n != 2 {
		t.Fatalf("stats %+v, last wait for %d copies", st, h.n)
	}
	for _, p := range []string{"/", "/a", "/b", "/c"} {
		if n := len(s.requests(p)); n != 1 {
			t.Fatalf("%s requested %d times", p, n)
		}
	}
}
