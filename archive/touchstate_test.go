package archive

import (
	"context"
	"errors"
	"testing"
	"time"
)

// putWithState stores a capture of u with a crawl state, as the crawler
// does, and returns the state State then reads.
func putWithState(t *testing.T, s *Store, u string, at time.Time, body string) CrawlState {
	t.Helper()
	c := capture(u, at, body)
	c.State = &CrawlState{ETag: `"x"`, Status: 200, Checked: at}
	mustPut(t, s, c)
	st, err := s.State(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestTouchStateSkipsLookup: a crawl state Put wrote comes back from State
// with a Versioned token, and TouchState then records the check without
// looking the URL's version up; a state SetState wrote, one from no store
// and Touch look it up, and a URL without a version is still refused.
func TestTouchStateSkipsLookup(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true})
	u := "http://a.example/page"
	st := putWithState(t, s, u, t0, "one")
	if st.Versioned == 0 {
		t.Fatalf("state written by Put read without a Versioned token: %+v", st)
	}
	must(t, s.TouchState(ctx, u, t0.Add(day), st))
	if n := s.touchLookups.Load(); n != 0 {
		t.Fatalf("TouchState with a token looked the version up %d times", n)
	}
	checks, err := s.CheckKinds(ctx, u)
	if err != nil || len(checks) != 1 || !checks[0].Time.Equal(t0.Add(day)) || !checks[0].NotModified {
		t.Fatalf("checks %+v, %v", checks, err)
	}

	// The crawler's own state (no version with it): looked up.
	set := CrawlState{ETag: `"y"`, Status: 200, Checked: t0.Add(day)}
	must(t, s.SetState(ctx, u, set))
	got, err := s.State(ctx, u)
	if err != nil || got.Versioned != 0 {
		t.Fatalf("state SetState wrote: %+v, %v", got, err)
	}
	must(t, s.TouchState(ctx, u, t0.Add(2*day), got))
	must(t, s.Touch(ctx, u, t0.Add(3*day)))
	if n := s.touchLookups.Load(); n != 2 {
		t.Fatalf("%d look-ups for two checks without a token, want 2", n)
	}

	// A token proves nothing for another URL's check: without a
	// version it is refused (the token names no URL, so a caller must
	// pass the state of the URL it touches; the crawler does).
	other := "http://a.example/none"
	if err := s.TouchState(ctx, other, t0.Add(day), CrawlState{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("touch of a URL without a version: %v", err)
	}
}

// TestTouchStateAfterPurge: a purge between the crawler's State and its
// check makes the token stale: the check of a URL the purge left without
// versions is refused and nothing is written, and a URL the purge did
// not touch is looked up and checked.
func TestTouchStateAfterPurge(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true})
	gone, kept := "http://example.com/private/1", "http://example.com/public/1"
	stGone := putWithState(t, s, gone, t0, "gone")
	stKept := putWithState(t, s, kept, t0, "kept")
	n, err := s.PurgeURLs(ctx, URLPurge{ID: "p", SURT: "com,example)/private"})
	if err != nil || n != 1 {
		t.Fatalf("purged %d, %v", n, err)
	}
	if err := s.TouchState(ctx, gone, t0.Add(day), stGone); !errors.Is(err, ErrNotFound) {
		t.Fatalf("check of a purged URL with a state read before the purge: %v", err)
	}
	if checks, err := s.CheckKinds(ctx, gone); err != nil || len(checks) != 0 {
		t.Fatalf("purged URL has checks %+v, %v", checks, err)
	}
	must(t, s.TouchState(ctx, kept, t0.Add(day), stKept))
	if n := s.touchLookups.Load(); n != 2 {
		t.Fatalf("%d look-ups after a purge, want 2", n)
	}
	// A state read after the purge is a token again.
	st, err := s.State(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.TouchState(ctx, kept, t0.Add(2*day), st))
	if n := s.touchLookups.Load(); n != 2 {
		t.Fatalf("%d look-ups, want 2: a fresh token looked the version up", n)
	}
}

// TestReindexKeepsVersionedStates: a rebuild keeps the mark of a state
// written with a version when the segments still hold a version of its
// URL, and drops it (the state stays, as SetState's would) when they do
// not.
func TestReindexKeepsVersionedStates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	u, lost := "http://a.example/kept", "http://a.example/lost"
	putWithState(t, s, u, t0, "kept")
	// A versioned state whose version the segments do not hold (as after
	// a segment's damaged tail was cut).
	val, err := encodeState(lost, CrawlState{ETag: `"z"`, Status: 200, Checked: t0}, true)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.putState(lost, val))
	s.Close()
	if _, err := Reindex(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, err := s.State(ctx, u); err != nil || st.Versioned == 0 {
		t.Fatalf("state of a URL with a version after reindex: %+v, %v", st, err)
	}
	st, err := s.State(ctx, lost)
	if err != nil || st.Versioned != 0 || st.ETag != `"z"` {
		t.Fatalf("state of a URL without a version after reindex: %+v, %v", st, err)
	}
	if err := s.TouchState(ctx, lost, t0.Add(day), st); !errors.Is(err, ErrNotFound) {
		t.Fatalf("check of a URL without a version after reindex: %v", err)
	}
}

// TestTouchStateOtherOpening: a token read before the store was closed
// proves nothing to the store opened again (a purge may have run in
// between): the check looks the version up.
func TestTouchStateOtherOpening(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	u := "http://a.example/page"
	st := putWithState(t, s, u, t0, "one")
	s.Close()
	s, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must(t, s.TouchState(ctx, u, t0.Add(day), st))
	if n := s.Stats().TouchLookups; n != 1 {
		t.Fatalf("%d look-ups with an earlier opening's token, want 1", n)
	}
}
