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
	c, err := New(t.TempDir(), cfg, newMemArchive(), f)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/kept"), s.url("/moved")}); err != nil {
		t.Fatal(err)
	}
	f.on.Store(true) // a node joined in front of ours before the fetch
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	waitIdle(t, c)
	if n := len(s.requests("/moved")); n != 0 {
		t.Errorf("/moved requested %d times by a node that no longer owns it", n)
	}
	if n := len(s.requests("/kept")); n != 1 {
		t.Errorf("/kept requested %d times, want 1", n)
	}
	f.mu.Lock()
	passed := slices.Clone(f.passed)
	f.mu.Unlock()
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

func (f *relocForwarder) Moved(_ context.Context, u string) bool { return f.on.Load() && u == f.moved }

func (f *relocForwarder) PassOn(_ context.Context, u string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.passed = append(f.passed, u)
	return nil
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
	c, err := New(t.TempDir(), cfg, newMemArchive(), f)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/kept"), moved}); err != nil {
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
	waitIdle(t, c)
	if n := len(s.requests("/kept")); n != 1 {
		t.Errorf("/kept requested %d times, want 1", n)
	}
	f.mu.Lock()
	passed := slices.Clone(f.passed)
	f.mu.Unlock()
	if !slices.Equal(passed, []string{moved}) {
		t.Errorf("passed on %v, want /moved (dropped at Start otherwise)", passed)
	}
}
