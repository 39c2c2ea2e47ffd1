package replicate

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestPushVsPullCost compares, in one run, the two ways a replica gets
// d = 256 new versions of an archive of n = 2,048 it already holds:
// the pull path (Sync of the whole range: sums, bisection, listings,
// batched reads) and the push path (OpOffer batches of MaxBatch, each
// served by Copy: batched reads). It logs the bytes on the wire per
// version (total, and without the records themselves) and the CPU per
// version, and fails unless the push costs fewer bytes of protocol per
// version than the pull.
//
//	go test ./replicate -run PushVsPullCost -v
func TestPushVsPullCost(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 4,600 versions")
	}
	const n, d = 2048, 256
	ctx := context.Background()
	c := makeCorpus(t, n+d)
	src := openStore(t)
	fill(t, src, c, func(int) bool { return true })
	isNew := func(i int) bool { return i%((n+d)/d) == 0 } // d spread over the ring
	var fresh []archive.Entry
	for i, e := range c.ents {
		if isNew(i) {
			fresh = append(fresh, e)
		}
	}
	pullDst, pushDst := openStore(t), openStore(t)
	fill(t, pullDst, c, func(i int) bool { return !isNew(i) })
	fill(t, pushDst, c, func(i int) bool { return !isNew(i) })

	cpu0 := cpuTime(t)
	pull, err := Sync(ctx, pullDst, serve(src), id.ID{}, id.ID{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pullCPU := cpuTime(t) - cpu0

	// The push: the owner's offers reach the replica's Server, whose
	// Offer callback copies from the owner.
	var push Stats
	replica := &Server{Source: pushDst, Offer: func(ctx context.Context, r Request) error {
		st, err := Copy(ctx, pushDst, serve(src), r.A, r.B, r.Entries, Options{})
		push.Add(st)
		return err
	}}
	owner := NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		rep, _ := replica.Handle(ctx, req)
		return rep, nil
	}))
	from := Contact{Peer: "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo", Addr: "127.0.0.1:4001", Index: 3}
	cpu0 = cpuTime(t)
	for es := fresh; len(es) > 0; {
		k := min(len(es), MaxBatch)
		if err := owner.Offer(ctx, id.ID{}, id.ID{}, from, es[:k]); err != nil {
			t.Fatal(err)
		}
		es = es[k:]
	}
	pushCPU := cpuTime(t) - cpu0
	push.Traffic.Requests += owner.Traffic().Requests
	push.Traffic.Sent += owner.Traffic().Sent
	push.Traffic.Received += owner.Traffic().Received

	if pull.Pulled != d || push.Pulled != d {
		t.Fatalf("pulled %d, pushed %d; want %d each", pull.Pulled, push.Pulled, d)
	}
	per := func(s Stats) (total, protocol float64) {
		return float64(s.Traffic.Bytes()) / d, float64(s.Traffic.Bytes()-s.PulledBytes) / d
	}
	pullTotal, pullProto := per(pull)
	pushTotal, pushProto := per(push)
	t.Logf("%d new of %d versions (records of %d bytes on average)", d, n+d, pull.PulledBytes/d)
	t.Logf("pull: %d round trips, %.0f bytes a version on the wire (%.0f without the record), %s CPU a version",
		pull.Traffic.Requests, pullTotal, pullProto, pullCPU/d)
	t.Logf("push: %d round trips, %.0f bytes a version on the wire (%.0f without the record), %s CPU a version",
		push.Traffic.Requests, pushTotal, pushProto, pushCPU/d)
	t.Logf("push/pull: bytes %.2f (protocol %.2f), CPU %.2f",
		pushTotal/pullTotal, pushProto/pullProto, float64(pushCPU)/float64(pullCPU))
	if pushProto >= pullProto {
		t.Fatalf("push costs %.0f protocol bytes a version, pull %.0f", pushProto, pullProto)
	}
}
