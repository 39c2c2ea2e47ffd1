package archive

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
)

// TestGroupCommitConsistent runs concurrent synced Puts, so that index
// batches share groups, and checks that the totals and every directory
// sum they touched equal what the returned versions imply, before and
// after a reopen.
func TestGroupCommitConsistent(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{}) // synced: groups form while one is written
	if err != nil {
		t.Fatal(err)
	}
	const workers, per = 8, 12
	var mu sync.Mutex
	var vs []Version
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				u := fmt.Sprintf("http://g%d.example/%d", w%3, w*per+i)
				v, added, err := s.Put(context.Background(), capture(u, t0, "body of "+u))
				if err != nil || !added {
					errs <- fmt.Errorf("put %s: added %v, %v", u, added, err)
					return
				}
				mu.Lock()
				vs = append(vs, v)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The sums the versions imply, per level and directory.
	want := map[string]DirSum{}
	var bytes, payload int64
	for _, v := range vs {
		e := v.Entry()
		for level := RootLevel; level <= LeafLevel; level++ {
			k := string(hashKey(level, e.Key[:]))
			d := want[k]
			d.add(entrySum(e))
			want[k] = d
		}
		payload += v.Length
	}
	check := func(s *Store) {
		t.Helper()
		for k, w := range want {
			got, err := s.getSum([]byte(k))
			if err != nil {
				t.Fatal(err)
			}
			if got != w {
				t.Fatalf("dir sum %x = %+v, want %+v", k, got, w)
			}
		}
		st := s.Stats()
		if st.Versions != workers*per || st.URLs != workers*per || st.PayloadBytes != payload || st.Bytes <= 0 {
			t.Fatalf("stats %+v, want %d versions and URLs, %d payload bytes", st, workers*per, payload)
		}
		if bytes == 0 {
			bytes = st.Bytes
		} else if st.Bytes != bytes {
			t.Fatalf("bytes %d after reopen, %d before", st.Bytes, bytes)
		}
		if n := len(s.gc.sums); n != 0 {
			t.Fatalf("%d uncommitted directory sums left after every Put returned", n)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(s2)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Fsck(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Versions != workers*per {
		t.Fatalf("fsck after group commits: %+v", rep)
	}
}

// TestCloseWhilePutting closes the store under concurrent Puts: every Put
// that returned a version finds it indexed after a reopen, the others
// fail with an error, and Close returns only after the last group.
func TestCloseWhilePutting(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const workers = 6
	var mu sync.Mutex
	var stored []string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				u := fmt.Sprintf("http://c.example/%d/%d", w, i)
				if _, _, err := s.Put(context.Background(), capture(u, t0, u)); err != nil {
					return // closed
				}
				mu.Lock()
				stored = append(stored, u)
				mu.Unlock()
			}
		}()
	}
	testwait.For(t, "the puts to progress", 20*time.Second, func() error {
		if s.Stats().Versions < 3*workers {
			return fmt.Errorf("%+v", s.Stats())
		}
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, _, err := s.Put(context.Background(), capture("http://c.example/late", t0, "x")); err == nil {
		t.Fatal("Put after Close succeeded")
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, u := range stored {
		if _, err := s2.At(context.Background(), u, t0); err != nil {
			t.Fatalf("%s was stored before Close but is not indexed after reopen: %v", u, err)
		}
	}
	if st := s2.Stats(); st.Versions < int64(len(stored)) {
		t.Fatalf("reopened stats %+v count fewer than the %d stored versions", st, len(stored))
	}
}

// TestIndexAfterCloseFails checks the committer's refusal path directly.
func TestIndexAfterCloseFails(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	v, _ := mustPut(t, s, capture("http://a.example/", t0, "a"))
	s.stopCommitter()
	if err := s.index(v, s.segs.cur[id.ID{}], false, nil, nil); !errors.Is(err, errStoreClosed) {
		t.Fatalf("index after stop: %v, want %v", err, errStoreClosed)
	}
}

// groupCommits returns how many index groups s has written.
func groupCommits(s *Store) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gc.commits
}

// pendingGroup returns the index group forming, nil if none.
func pendingGroup(s *Store) *indexGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gc.cur
}

// gateVerifier is edVerifier, each check waiting until release is closed
// once it has told started.
type gateVerifier struct {
	started chan struct{}
	release chan struct{}
}

func (g gateVerifier) Verify(peer string, msg, sig []byte) error {
	g.started <- struct{}{}
	<-g.release
	return edVerifier{}.Verify(peer, msg, sig)
}

// TestCommitWindowImport: an Import is under way from its decoding on, as
// a Put is from its compression: a Put that starts while an Import's
// signature is being checked waits (within the window) and shares the
// Import's group, so an offer's records, decoded side by side, share
// their syncs.
func TestCommitWindowImport(t *testing.T) {
	ctx := context.Background()
	g := gateVerifier{started: make(chan struct{}, 1), release: make(chan struct{})}
	s, err := Open(t.TempDir(), Options{CommitWindow: time.Hour, Verifier: g, Now: func() time.Time { return t0.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name, data := putFile(t, newEdSigner(1), capture("http://example.org/imported", t0, "a replica's copy"))
	imported := make(chan error, 1)
	go func() {
		_, _, err := s.Import(ctx, name, data)
		imported <- err
	}()
	<-g.started // the Import is decoded and being verified
	put := make(chan error, 1)
	go func() {
		_, _, err := s.Put(ctx, capture("http://example.org/own", t0, "the node's own fetch"))
		put <- err
	}()
	select {
	case err := <-put:
		t.Fatalf("Put returned (%v) while an Import was being verified", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(g.release)
	for _, c := range []chan error{imported, put} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if n := groupCommits(s); n != 1 {
		t.Errorf("a Put and an Import under way together made %d groups, want 1", n)
	}
}

// TestCommitWindow checks the committer's wait for writes under way: a
// group is not synced while another Put is under way (up to the window),
// that Put joins it, and a lone writer never waits.
func TestCommitWindow(t *testing.T) {
	ctx := context.Background()
	put := func(s *Store, u string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, _, err := s.Put(ctx, capture(u, t0, "body of "+u))
			done <- err
		}()
		return done
	}
	const long = time.Hour
	s, err := Open(t.TempDir(), Options{CommitWindow: long})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// A lone writer: each Put is synced at once, in a group of its own.
	start := time.Now()
	for i := range 5 {
		if err := <-put(s, fmt.Sprintf("http://lone.example/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("5 Puts one after another took %v", d)
	}
	if n := groupCommits(s); n != 5 {
		t.Errorf("5 Puts one after another made %d groups, want 5", n)
	}

	// A write under way (held here) keeps the group open; a Put that
	// starts meanwhile joins it; both return when the held write ends.
	giveUp := s.beginWrite()
	a := put(s, "http://busy.example/a")
	select {
	case err := <-a:
		t.Fatalf("Put returned (%v) while another write was under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	b := put(s, "http://busy.example/b")
	select {
	case err := <-b:
		t.Fatalf("second Put returned (%v) while another write was under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	giveUp()
	for _, c := range []<-chan error{a, b} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if n := groupCommits(s); n != 6 {
		t.Errorf("two Puts under way together made %d groups, want one", n-5)
	}
	if st := s.Stats(); st.Versions != 7 {
		t.Errorf("stored %d versions, want 7", st.Versions)
	}

	// The window bounds the wait for a write that does not end.
	s2, err := Open(t.TempDir(), Options{CommitWindow: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	defer s2.beginWrite()()
	start = time.Now()
	if err := <-put(s2, "http://stuck.example/"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > time.Minute {
		t.Errorf("Put beside a stuck write returned after %v, want the 50ms window", d)
	}
}
