package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// TestOfferVerification: an offer passes the pull request's rule
// (verifyOwner) before this node opens any stream to the sender: offers
// outside the sender's role are refused and counted, and read nothing.
func TestOfferVerification(t *testing.T) {
	addr := "127.0.0.1:4001"
	ownerC := ring.Contact{Peer: "owner", Addr: addr}
	b := ring.VirtualID(addr, 2)
	pred := id.OfString("pred")
	ownerV := ring.Node{ID: b, Contact: ownerC, Index: 2}
	me := ring.Contact{Peer: "me", Addr: "127.0.0.1:4003"}
	succs := func(_ context.Context, key id.ID, k int) ([]ring.Node, error) {
		if key == pred.AddPow2(0) {
			return []ring.Node{ownerV, {Contact: me}}, nil
		}
		return []ring.Node{{ID: id.OfString("someone"), Contact: ring.Contact{Peer: "x", Addr: "127.0.0.1:9"}}}, nil
	}
	var opened []ring.Contact
	errDial := errors.New("no network in this test")
	r := New(Config{Self: me, Ring: succsRing(succs),
		Open: func(_ context.Context, c ring.Contact, _ protocol.ID) (network.Stream, error) {
			opened = append(opened, c)
			return nil, errDial
		}})
	es := []archive.Entry{{Key: b, Digest: id.OfString("d"), Day: 1}}
	good := replicate.Request{Op: replicate.OpOffer, A: pred, B: b,
		From: replicate.Contact{Peer: "owner", Addr: addr, Index: 2}, Entries: es}
	outside := good
	outside.A = id.OfString("outside")
	intruder := ring.Node{Contact: ring.Contact{Peer: "intruder", Addr: "127.0.0.1:4009"}}
	ctx := context.Background()
	if err := r.acceptOffer(ctx, intruder, good); !errors.Is(err, ErrRole) {
		t.Fatalf("offer for the owner sent by another member: %v", err)
	}
	if err := r.acceptOffer(ctx, ownerV, outside); !errors.Is(err, ErrRole) {
		t.Fatalf("offer wider than the owner's range: %v", err)
	}
	if len(opened) != 0 || r.st.Refused != 2 || r.st.Push.Served != 0 {
		t.Fatalf("refused offers: opened %v, %+v", opened, r.st)
	}
	// The owner's own offer is accepted: the records are read from it;
	// one that could not be read makes the answer an error.
	if err := r.acceptOffer(ctx, ownerV, good); err == nil || len(opened) != 1 || opened[0] != ownerC {
		t.Fatalf("owner's offer: %v, opened %v", err, opened)
	}
	if r.st.Push.Served != 1 || r.st.Refused != 2 {
		t.Fatalf("counters: %+v", r.st)
	}
}

// TestNotifyBounded: the push queue holds at most pushQueueLen records
// and as many URLs; the rest are counted as dropped, never blocking the
// store or the crawler.
func TestNotifyBounded(t *testing.T) {
	r := New(Config{ShareKnown: func(context.Context, []string) error { return nil }})
	for i := range pushQueueLen + 3 {
		r.Notify(archive.Version{Key: id.OfString(string(rune(i)))})
	}
	urls := make([]string, pushQueueLen-1)
	r.NotifyKnown(urls)
	r.NotifyKnown([]string{"a", "b", "c"})
	st := r.Stats().Push
	if st.Queued != pushQueueLen || st.Dropped != 3 || st.Known != pushQueueLen || st.KnownDropped != 2 {
		t.Fatalf("push counters: %+v", st)
	}
	if r.PushIdle() {
		t.Fatal("idle with records waiting")
	}
	// Without ShareKnown, URLs are not queued at all.
	r2 := New(Config{})
	r2.NotifyKnown([]string{"a"})
	if !r2.PushIdle() || r2.Stats().Push.Known != 0 {
		t.Fatal("URLs queued without ShareKnown")
	}
}

// partialShare is a ShareKnown error naming the URLs to share again, as
// forward.ShareError does.
type partialShare []string

func (p partialShare) Error() string        { return fmt.Sprintf("%d URLs not shared", len(p)) }
func (p partialShare) FailedURLs() []string { return p }

// TestPushKnownRetries: URLs whose share fails are shared again after a
// backoff, up to knownTries shares in all; then the crawler's daily
// share carries them. A ShareKnown error that names the URLs it failed
// (FailedURLs) has only those shared again.
func TestPushKnownRetries(t *testing.T) {
	var mu sync.Mutex
	var calls [][]string
	var failWith func([]string) error // nil: the share succeeds
	r := New(Config{ShareKnown: func(_ context.Context, urls []string) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, urls)
		if failWith != nil {
			return failWith(urls)
		}
		return nil
	}})
	var backoffs []int
	r.knownBackoff = func(tries int) time.Duration {
		mu.Lock()
		backoffs = append(backoffs, tries)
		mu.Unlock()
		return time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Push(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func(PushStats) bool) {
		t.Helper()
		testwait.For(t, what, 10*time.Second, func() error {
			if !(r.PushIdle() && cond(r.Stats().Push)) {
				return fmt.Errorf("push %+v", r.Stats().Push)
			}
			return nil
		})
	}
	set := func(f func([]string) error) {
		mu.Lock()
		defer mu.Unlock()
		failWith, calls, backoffs = f, nil, nil
	}
	fails := 0
	set(func([]string) error {
		if fails++; fails <= 3 {
			return errors.New("holder unreachable")
		}
		return nil
	})
	r.NotifyKnown([]string{"http://a.example/", "http://b.example/"})
	waitFor("shared on the fourth try", func(st PushStats) bool { return st.KnownShared == 2 })
	if st := r.Stats().Push; st.KnownRetried != 6 || st.KnownFailed != 0 || len(calls) != 4 || fmt.Sprint(backoffs) != "[1 2 3]" {
		t.Fatalf("after three failures: %+v, %d calls, backoffs %v", st, len(calls), backoffs)
	}

	// A share that names what it failed: only that is shared again.
	set(func(urls []string) error {
		if len(urls) > 1 {
			return fmt.Errorf("share known: %w", partialShare{urls[1]})
		}
		return nil
	})
	r.NotifyKnown([]string{"http://c.example/", "http://d.example/"})
	waitFor("the missed URL shared again", func(st PushStats) bool { return st.KnownShared == 4 })
	if st := r.Stats().Push; st.KnownRetried != 7 || len(calls) != 2 || fmt.Sprint(calls[1]) != "[http://d.example/]" {
		t.Fatalf("partial share: %+v, calls %v", st, calls)
	}

	// A holder that never accepts: knownTries shares, then given up.
	set(func([]string) error { return errors.New("refused") })
	r.NotifyKnown([]string{"http://e.example/"})
	waitFor("given up", func(st PushStats) bool { return st.KnownFailed == 1 })
	if st := r.Stats().Push; st.KnownRetried != 7+knownTries-1 || st.KnownShared != 4 || len(calls) != knownTries {
		t.Fatalf("after %d failures: %+v, %d calls", knownTries, st, len(calls))
	}
}

// TestKnownBackoff: a quarter second, four times as long after each
// further failure, at most a minute.
func TestKnownBackoff(t *testing.T) {
	var got []time.Duration
	var total time.Duration
	for tries := 1; tries < knownTries; tries++ {
		got = append(got, knownBackoff(tries))
		total += knownBackoff(tries)
	}
	if fmt.Sprint(got) != "[250ms 1s 4s 16s 1m0s 1m0s 1m0s]" {
		t.Fatalf("backoffs %v", got)
	}
	if total < 3*time.Minute || total > 4*time.Minute {
		t.Fatalf("shares spread over %v", total)
	}
}

// TestHandOffVerification: a hand-off is refused before any stream opens
// when its sender names another member, or when the range it names is
// not one of this node's virtual servers with a known range.
func TestHandOffVerification(t *testing.T) {
	me := ring.Contact{Peer: "me", Addr: "127.0.0.1:4003"}
	b := ring.VirtualID(me.Addr, 1)
	st := ring.Status{Vnodes: []ring.VnodeStatus{{Node: ring.Node{ID: b, Contact: me, Index: 1},
		Range: ring.Range{Start: id.OfString("pred"), End: b, Known: true}}}}
	var opened []ring.Contact
	held, err := OpenHeld(t.TempDir(), HoldLimits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := New(Config{Self: me, Ring: statusRing{st}, Held: held,
		Check: func(context.Context, string, []byte) (archive.Version, error) {
			return archive.Version{}, archive.ErrCorrupt
		},
		Open: func(_ context.Context, c ring.Contact, _ protocol.ID) (network.Stream, error) {
			opened = append(opened, c)
			return nil, errors.New("no network in this test")
		}})
	sender := ring.Node{Contact: ring.Contact{Peer: "x", Addr: "127.0.0.1:4005"}}
	es := []archive.Entry{{Key: b, Digest: id.OfString("d"), Day: 1}}
	good := replicate.Request{Op: replicate.OpHandOff, A: b, B: b,
		From: replicate.Contact{Peer: "x", Addr: "127.0.0.1:4005"}, Entries: es, Carried: make([][]byte, 1)}
	other := good
	other.B = ring.VirtualID(me.Addr, 2)
	ctx := context.Background()
	if err := r.acceptHandOff(ctx, ring.Node{Contact: ring.Contact{Peer: "y", Addr: "127.0.0.1:4006"}}, good); !errors.Is(err, ErrRole) {
		t.Fatalf("hand-off naming another sender: %v", err)
	}
	if err := r.acceptHandOff(ctx, sender, other); err == nil || errors.Is(err, ErrRole) {
		t.Fatalf("hand-off of a range not this node's: %v", err)
	}
	if len(opened) != 0 || r.st.Refused != 1 || r.st.HandOff.Served != 0 {
		t.Fatalf("refused hand-offs: opened %v, %+v", opened, r.st)
	}
	// Its own range: the record is read from the sender.
	if err := r.acceptHandOff(ctx, sender, good); err == nil || len(opened) != 1 || opened[0] != sender.Contact {
		t.Fatalf("hand-off: %v, opened %v", err, opened)
	}
}

// statusRing is a Ring with a fixed status whose lookups fail.
type statusRing struct{ st ring.Status }

func (s statusRing) Status() ring.Status { return s.st }

func (s statusRing) Successors(context.Context, id.ID, int) ([]ring.Node, error) {
	return nil, errors.New("no lookups in this test")
}

// TestShareAllOneCall: new URLs and the retries due go to ShareKnown in
// one call (a failing holder costs one timeout, not one a batch), each
// URL once; what failed waits again with its own count of shares, and a
// URL at knownTries is given up.
func TestShareAllOneCall(t *testing.T) {
	var calls [][]string
	r := New(Config{ShareKnown: func(_ context.Context, urls []string) error {
		calls = append(calls, urls)
		return fmt.Errorf("share known: %w", partialShare{urls[1], urls[2], urls[3]})
	}})
	r.knownBackoff = func(tries int) time.Duration { return time.Duration(tries) * time.Hour }
	r.pq.sharing = true
	r.shareAll(context.Background(), []string{"new"}, []knownRetry{
		{urls: []string{"once", "last"}, tries: 1},
		{urls: []string{"last", "twice"}, tries: knownTries - 1},
	})
	if len(calls) != 1 || fmt.Sprint(calls[0]) != "[new once last twice]" {
		t.Fatalf("calls %v, want one: [new once last twice]", calls)
	}
	var got []string
	for _, b := range r.pq.again {
		got = append(got, fmt.Sprintf("%v@%d", b.urls, b.tries))
	}
	if fmt.Sprint(got) != "[[once]@2]" {
		t.Fatalf("waiting again %v, want [[once]@2]", got)
	}
	st := r.Stats().Push
	if st.KnownShared != 1 || st.KnownRetried != 1 || st.KnownFailed != 2 || r.pq.sharing {
		t.Fatalf("%+v, sharing %v: want 1 shared, 1 retried, 2 given up, not sharing", st, r.pq.sharing)
	}
}
