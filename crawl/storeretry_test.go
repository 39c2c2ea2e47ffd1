package crawl

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// flakyArchive fails its first fails Puts with err.
type flakyArchive struct {
	*memArchive
	mu    sync.Mutex
	fails int
	err   error
}

func (f *flakyArchive) Put(ctx context.Context, c archive.Capture) (archive.Version, bool, error) {
	f.mu.Lock()
	if f.fails > 0 {
		f.fails--
		f.mu.Unlock()
		return archive.Version{}, false, f.err
	}
	f.mu.Unlock()
	return f.memArchive.Put(ctx, c)
}

// TestStoreErrorRetriesWithBackoff: a page whose Put fails with an error
// that may pass stays queued and is fetched again after waits that
// double; a capture the archive cannot store is dropped at once.
func TestStoreErrorRetriesWithBackoff(t *testing.T) {
	s := newSite(t, map[string]string{"/": "<p>a page</p>"})
	clock := &fakeClock{t: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)}
	a := &flakyArchive{memArchive: newMemArchive(), fails: 3, err: errors.New("disk gone for a while")}
	c, err := New(t.TempDir(), testConfig(clock), depsOf(a, &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waits []time.Duration
	c.retry.sleep = func(_ context.Context, d time.Duration) {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if n := a.count(s.url("/")); n != 1 {
		t.Fatalf("page stored %d times after transient failures, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(waits, want) {
		t.Fatalf("back-off waits %v, want %v", waits, want)
	}
	if c.retry.next != 0 {
		t.Fatalf("back-off not reset by a successful Put: %v", c.retry.next)
	}
	if got := c.Stats().ErrorsByKind[KindArchive]; got != 3 {
		t.Fatalf("%d archive errors counted, want 3", got)
	}
}

// TestBadCaptureNotRetried: ErrBadCapture finishes the entry.
func TestBadCaptureNotRetried(t *testing.T) {
	s := newSite(t, map[string]string{"/": "<p>a page</p>"})
	clock := &fakeClock{t: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)}
	a := &flakyArchive{memArchive: newMemArchive(), fails: 1 << 30, err: archive.ErrBadCapture}
	c, err := New(t.TempDir(), testConfig(clock), depsOf(a, &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	c.retry.sleep = func(context.Context, time.Duration) { t.Error("waited after a bad capture") }
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if got := c.Stats().ErrorsByKind[KindArchive]; got != 1 {
		t.Fatalf("%d archive errors, want 1", got)
	}
}
