package replicate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
)

// entriesAllocBound is what one whole-ring OpEntries request may allocate
// on the server, whatever the archive holds: the scan stops at the entry
// after MaxEntries (a few hundred bytes of index decoding per entry).
const entriesAllocBound = 4 << 20

// putMany stores versions from..from+n-1 in s, from 8 goroutines (the
// archive commits concurrent puts in groups).
func putMany(t testing.TB, s *archive.Store, from, n int) {
	t.Helper()
	ctx := context.Background()
	var g errgroup.Group
	for w := range 8 {
		g.Go(func() error {
			for i := from + w; i < from+n; i += 8 {
				if _, _, err := s.Put(ctx, archive.Capture{
					URL: fmt.Sprintf("http://h%d.example/p%d", i%7, i), Time: t0,
					Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprint("page ", i)),
				}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// entriesCost answers one whole-ring entries request (41 bytes) and
// returns the bytes it allocated and the reply's error.
func entriesCost(t *testing.T, srv *Server) (uint64, error) {
	t.Helper()
	req := Request{Op: OpEntries}.Encode() // A == B == 0: the whole ring
	if len(req) != 41 {
		t.Fatalf("request of %d bytes, want 41", len(req))
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rep, err := srv.Handle(context.Background(), req)
	runtime.ReadMemStats(&after)
	if err == nil {
		if _, derr := DecodeEntries(rep); derr != nil {
			t.Fatal(derr)
		}
	}
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestEntriesRequestBounded: a 41-byte request for the entries of the
// whole ring, against a store holding far more than MaxEntries, is
// refused having scanned MaxEntries+1 entries: its cost does not grow
// with the archive (2× and 3× MaxEntries cost the same, within 10%)
// and stays under entriesAllocBound. (Before the bound, the server listed
// every entry and then compared the count with MaxEntries.)
func TestEntriesRequestBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 12,288 versions")
	}
	s := openStore(t)
	srv := &Server{Source: s}
	putMany(t, s, 0, MaxEntries)
	small, err := entriesCost(t, srv)
	if err != nil {
		t.Fatalf("%d entries: %v", MaxEntries, err)
	}
	putMany(t, s, MaxEntries, MaxEntries)
	mid, err := entriesCost(t, srv)
	if !errors.Is(err, archive.ErrTooMany) {
		t.Fatalf("%d entries: %v, want ErrTooMany", 2*MaxEntries, err)
	}
	putMany(t, s, 2*MaxEntries, MaxEntries)
	big, err := entriesCost(t, srv)
	if !errors.Is(err, archive.ErrTooMany) {
		t.Fatalf("%d entries: %v, want ErrTooMany", 3*MaxEntries, err)
	}
	t.Logf("bytes allocated per whole-ring entries request: %d at %d entries (answered), %d at %d, %d at %d (refused)",
		small, MaxEntries, mid, 2*MaxEntries, big, 3*MaxEntries)
	if big > entriesAllocBound || float64(big) > 1.1*float64(mid) {
		t.Fatalf("entries request allocated %d bytes at %d entries, %d at %d: want ≤ %d and not growing",
			big, 3*MaxEntries, mid, 2*MaxEntries, entriesAllocBound)
	}
}

// TestEntriesUpToStopsAtBound: the listing stops at the bound in every
// kind of range, wrapped ones included.
func TestEntriesUpToStopsAtBound(t *testing.T) {
	s := openStore(t)
	putMany(t, s, 0, 100)
	ctx := context.Background()
	all, err := s.Entries(ctx, id.ID{}, id.ID{})
	if err != nil || len(all) != 100 {
		t.Fatalf("Entries: %d, %v", len(all), err)
	}
	for _, max := range []int{0, 1, 99} {
		if _, err := s.EntriesUpTo(ctx, id.ID{}, id.ID{}, max); !errors.Is(err, archive.ErrTooMany) {
			t.Errorf("EntriesUpTo(max %d) of 100: %v, want ErrTooMany", max, err)
		}
	}
	got, err := s.EntriesUpTo(ctx, id.ID{}, id.ID{}, 100)
	if err != nil || len(got) != 100 {
		t.Fatalf("EntriesUpTo(max 100) of 100: %d, %v", len(got), err)
	}
	mid := all[50].Key
	wrapped, err := s.EntriesUpTo(ctx, mid, all[10].Key, 100) // (mid, k10]: wraps past zero
	if want := 100 - 51 + 11; err != nil || len(wrapped) != want {
		t.Fatalf("wrapped range: %d entries, %v; want %d", len(wrapped), err, want)
	}
}

// TestReplyBudget: the records of the replies a Server's budget covers
// are held until each reply is released: a batch past the budget omits
// the rest (asked for again), a batch whose first record finds no room
// waits for it until its context ends, and a released reply makes room.
func TestReplyBudget(t *testing.T) {
	ctx := context.Background()
	c := makeCorpus(t, 10)
	s := openStore(t)
	fill(t, s, c, func(int) bool { return true })
	ents, err := s.Entries(ctx, id.ID{}, id.ID{})
	if err != nil || len(ents) != 10 {
		t.Fatalf("entries: %d, %v", len(ents), err)
	}
	var three int64
	for _, e := range ents[:3] {
		data, err := s.ReadFile(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		three += int64(len(data))
	}
	src := &countingSource{Store: s}
	srv := &Server{Source: src, Budget: wire.NewReplyBudget(three)}
	req := Request{Op: OpReadBatch, Entries: ents}.Encode()
	rep, release, err := srv.HandleHeld(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := DecodeFiles(rep, len(ents))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for i, f := range fs {
		switch {
		case f.Err == nil && i == got:
			got++
		case !errors.Is(f.Err, ErrOmitted):
			t.Fatalf("record %d: %v", i, f.Err)
		}
	}
	if got != 3 {
		t.Fatalf("%d records in a batch with a budget of 3, want 3 (the rest omitted)", got)
	}
	// The budget is held: another batch's first record waits, then
	// everything is omitted when its context ends, and no record was
	// read meanwhile (room is taken before a read).
	read := src.reads.Load()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	rep2, release2, err := srv.HandleHeld(short, req)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	fs2, err := DecodeFiles(rep2, len(ents))
	if err != nil || !errors.Is(fs2[0].Err, ErrOmitted) {
		t.Fatalf("a batch while the budget is held: %v, %v", fs2, err)
	}
	if n := src.reads.Load() - read; n != 0 {
		t.Fatalf("%d records read while the budget was held", n)
	}
	one := Request{Op: OpRead, Entry: ents[0]}.Encode()
	short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	_, release4, err := srv.HandleHeld(short, one)
	cancel()
	release4()
	if err == nil || src.reads.Load() != read {
		t.Fatalf("a single read while the budget is held: %v, %d records read", err, src.reads.Load()-read)
	}
	release2()
	release()
	rep3, release3, err := srv.HandleHeld(ctx, req)
	defer release3()
	if fs3, err := DecodeFiles(rep3, len(ents)); err != nil || fs3[0].Err != nil {
		t.Fatalf("a batch once the reply was released: %v", err)
	}
}

// countingSource counts the records it reads once room for them was
// granted.
type countingSource struct {
	*archive.Store
	reads atomic.Int64
}

func (c *countingSource) ReadFileWithin(ctx context.Context, e archive.Entry, room func(int64) bool) ([]byte, error) {
	return c.Store.ReadFileWithin(ctx, e, func(n int64) bool {
		ok := room(n)
		if ok {
			c.reads.Add(1)
		}
		return ok
	})
}
