package crawl

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// TestMovedEntryPassedOn: an entry queued while this node owned its URL,
// whose range then moved to another node, is handed to the Forwarder at
// fetch time and never requested here.
func TestMovedEntryPassedOn(t *testing.T) {
	s := newSite(t, map[string]string{"/kept": "k", "/moved": "m"})
	clock := newClock()
	cfg := testConfig(clock)
	f := &relocForwarder{moved: s.url("/moved")}
	c := startRelocating(t, cfg, f, s.url("/kept"), s.url("/moved")) // moved: a node joined in front of ours before the fetch
	waitIdle(t, c)
	if n := len(s.requests("/moved")); n != 0 {
		t.Errorf("/moved requested %d times by a node that no longer owns it", n)
	}
	if n := len(s.requests("/kept")); n != 1 {
		t.Errorf("/kept requested %d times, want 1", n)
	}
	passed := f.passedOn()
	if got := passed; !slices.Equal(got, []string{s.url("/moved")}) {
		t.Errorf("passed on %v, want only /moved", got)
	}
	if st := c.Stats(); st.PassedOn != 1 {
		t.Errorf("PassedOn = %d, want 1", st.PassedOn)
	}
}

// relocForwarder is a Relocator for which one URL has moved once on is
// set; it records what it is asked to pass on.
type relocForwarder struct {
	loopForwarder
	moved  string
	on     atomic.Bool
	passed []string
}

func (f *relocForwarder) Moved(_ context.Context, u string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on.Load() && u == f.moved
}

func (f *relocForwarder) PassOn(_ context.Context, u string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.passed = append(f.passed, u)
	return nil
}

// passedOn returns the URLs passed on so far.
func (f *relocForwarder) passedOn() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.passed)
}

// TestLinksBeforeStartKept: a new node's links can arrive between its
// ring join and Start. The day Start would begin then must not drop them:
// one this node no longer owns by then is passed on, not lost.
func TestLinksBeforeStartKept(t *testing.T) {
	s := newSite(t, map[string]string{"/kept": "k", "/moved": "m"})
	clock := newClock()
	cfg := testConfig(clock)
	moved := s.url("/moved")
	cfg.Owns = func(u string) bool { return u != moved }
	f := &relocForwarder{moved: moved}
	c := startRelocating(t, cfg, f, s.url("/kept"), moved)
	waitIdle(t, c)
	if n := len(s.requests("/kept")); n != 1 {
		t.Errorf("/kept requested %d times, want 1", n)
	}
	passed := f.passedOn()
	if !slices.Equal(passed, []string{moved}) {
		t.Errorf("passed on %v, want /moved (dropped at Start otherwise)", passed)
	}
}

// TestPassedOnComesBack: an entry passed on whose owner turns out to be
// this node after all (the ring's lookup disagreed with the fetch-time
// check while the ring formed) is queued again when it comes back, not
// dropped as seen today, and fetched once. A URL passed on a second time
// stays seen: two disagreeing views cannot pass it around all day.
func TestPassedOnComesBack(t *testing.T) {
	s := newSite(t, map[string]string{"/back": "b", "/twice": "t"})
	clock := newClock()
	cfg := testConfig(clock)
	f := &relocForwarder{moved: s.url("/back")}
	ctx := context.Background()
	c := startRelocating(t, cfg, f, s.url("/back"))
	waitIdle(t, c)
	f.on.Store(false) // the views agree now: the URL is this node's
	addIdle(t, c, s.url("/back"))
	if n := len(s.requests("/back")); n != 1 {
		t.Errorf("/back requested %d times after coming back, want 1", n)
	}
	// Passed on twice: the second return is dropped as seen today.
	f.mu.Lock()
	f.moved = s.url("/twice")
	f.mu.Unlock()
	f.on.Store(true)
	for range 2 {
		addIdle(t, c, s.url("/twice"))
	}
	f.on.Store(false)
	addIdle(t, c, s.url("/twice"))
	passed := f.passedOn()
	if want := []string{s.url("/back"), s.url("/twice"), s.url("/twice")}; !slices.Equal(passed, want) {
		t.Errorf("passed on %v, want %v", passed, want)
	}
	if n := len(s.requests("/twice")); n != 0 {
		t.Errorf("/twice requested %d times, want 0 (seen after its second pass)", n)
	}
	// A new day started ahead of the clock's (NewDay) forgets the passes:
	// passed on once that day, /twice comes back and is fetched.
	f.on.Store(true)
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	f.on.Store(false)
	addIdle(t, c, s.url("/twice"))
	if n := len(s.requests("/twice")); n != 1 {
		t.Errorf("/twice requested %d times on the next day after one pass, want 1", n)
	}
}

// startRelocating starts a crawler of cfg with forwarder f and urls
// queued, f passing on its moved URL from the start; Close is a cleanup.
func startRelocating(t *testing.T, cfg Config, f *relocForwarder, urls ...string) *Crawler {
	t.Helper()
	c, err := New(t.TempDir(), cfg, depsOf(newMemArchive(), f))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Add(ctx, urls); err != nil {
		t.Fatal(err)
	}
	f.on.Store(true)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return c
}

// addIdle adds urls to c and waits until it is idle.
func addIdle(t *testing.T, c *Crawler, urls ...string) {
	t.Helper()
	if err := c.Add(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
}
