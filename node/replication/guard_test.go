package replication

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// TestOwnedAt: the history has a key owned while a virtual server's
// range held it: a shrink keeps the rest, a growth adds keys from then,
// an unknown range changes nothing, a virtual server no longer listed
// ends its span. Saved and loaded by the next run, the last run's spans
// end when it was last known up: the time it was down is no one's.
func TestOwnedAt(t *testing.T) {
	v := id.OfString("vnode")
	at := func(s int) time.Time { return time.Unix(int64(1000+10*s), 0) }
	// Keys at distances before v: p(n) is n steps counterclockwise.
	p := func(n int64) id.ID {
		x := v
		for range n {
			x = before(x)
		}
		return x
	}
	var o ownedRanges
	o.observe(v, ring.Range{Start: p(10), End: v, Known: true}, at(0))
	o.observe(v, ring.Range{Start: p(5), End: v, Known: true}, at(1))  // a predecessor joined
	o.observe(v, ring.Range{}, at(2))                                  // unknown for a moment
	o.observe(v, ring.Range{Start: p(20), End: v, Known: true}, at(3)) // it left again, and one more
	o.observe(v, ring.Range{Start: p(20), End: v, Known: true}, at(4)) // no change
	type ownedCase struct {
		key  id.ID
		t    time.Time
		want bool
	}
	cases := []ownedCase{
		{v, at(0), true},
		{v, at(0).Add(-time.Second), false},
		{p(4), at(2), true},
		{p(7), at(0), true},
		{p(7), at(2), false}, // out of the range from 1 to 3
		{p(7), at(3), true},
		{p(15), at(2), false},
		{p(15), at(9), true},
		{p(25), at(9), false},
	}
	check := func(o *ownedRanges, when string) {
		t.Helper()
		for _, c := range cases {
			if got := o.ownedAt(c.key, c.t); got != c.want {
				t.Errorf("%s: ownedAt(%s, %d) = %v, want %v", when, c.key.Short(), c.t.Unix(), got, c.want)
			}
		}
	}
	check(&o, "running")
	if first, ok := o.firstOwned(p(7)); !ok || !first.Equal(at(0)) {
		t.Errorf("firstOwned = %v, %v; want %v", first, ok, at(0))
	}

	// Saved at 6, the node down from then until 8; loaded by the next run.
	path := filepath.Join(t.TempDir(), "owned")
	if err := o.save(path, at(6)); err != nil {
		t.Fatal(err)
	}
	var next ownedRanges
	if err := next.load(path); err != nil {
		t.Fatal(err)
	}
	next.observe(v, ring.Range{Start: p(5), End: v, Known: true}, at(8))
	cases = append(cases[:len(cases)-2],
		ownedCase{p(15), at(5), true},
		ownedCase{p(4), at(7), false}, // down
		ownedCase{p(4), at(9), true},
		ownedCase{p(15), at(9), false}, // no longer in the range
	)
	check(&next, "after a restart")

	o.observeStatus(ring.Status{}, at(5))
	if o.ownedAt(v, at(6)) || !o.ownedAt(v, at(4)) {
		t.Error("a virtual server no longer listed still owns, or its past is forgotten")
	}
	// Bounded: past maxOwnedSpans the oldest spans are forgotten.
	var many ownedRanges
	for i := range maxOwnedSpans + 10 {
		many.observe(v, ring.Range{Start: p(int64(10 + i%2)), End: v, Known: true}, at(i))
	}
	if n := len(many.spans); n != maxOwnedSpans || !many.ownedAt(v, at(maxOwnedSpans+20)) || many.ownedAt(v, at(5)) {
		t.Errorf("%d spans after %d changes (want %d), the last open %v, the first forgotten %v",
			n, maxOwnedSpans+10, maxOwnedSpans, many.ownedAt(v, at(maxOwnedSpans+20)), !many.ownedAt(v, at(5)))
	}
	if err := os.WriteFile(path, []byte("{garbled"), 0o644); err != nil {
		t.Fatal(err)
	}
	var bad ownedRanges
	if err := bad.load(path); err == nil {
		t.Error("a garbled history loaded")
	}
}

// rangeRing is a ring whose one local virtual server's range or
// successor list a test sets.
type rangeRing struct {
	mu sync.Mutex
	st ring.Status
}

func (r *rangeRing) Status() ring.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.Vnodes = slices.Clone(r.st.Vnodes) // the setters write the test's copy
	return st
}

func (r *rangeRing) setSuccessors(succs ...ring.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Vnodes[0].Successors = succs
}

func (r *rangeRing) setStart(a id.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Vnodes[0].Range.Start = a
}

func (r *rangeRing) Successors(context.Context, id.ID, int) ([]ring.Node, error) {
	return nil, fmt.Errorf("no lookups in this test")
}

// TestRoundHoldsReplicaCaptures: an owner and its replica on a mock
// network, both signing. A round imports the replica's captures made
// before the owner owned their keys (an hour before its first round, and
// three days before), and the owner's own capture the replica holds at
// any time. The replica's capture made after the owner's first round —
// a made-up one, signed by the replica, fresh — is held: not stored,
// queued for the owner's own fetch, not read again by the next round,
// counted; the owner's fetch of the same payload releases it. Once the
// owner's range grows, a capture of a key in the new part made before
// the growth is imported: the owner was not crawling that key then.
func TestRoundHoldsReplicaCaptures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs, keys := ed25519Hosts(t, 2)
	signer := func(i int) identity.Signer {
		s, err := identity.NewSigner(keys[i])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ownerC := ring.Contact{Peer: hs[0].ID().String(), Addr: "127.0.0.1:4001"}
	replicaC := ring.Contact{Peer: hs[1].ID().String(), Addr: "127.0.0.2:4001"}
	ownerV := ring.Node{ID: ring.VirtualID(ownerC.Addr, 0), Contact: ownerC}
	replicaV := ring.Node{ID: ring.VirtualID(replicaC.Addr, 0), Contact: replicaC}
	byPeer := map[string]ring.Contact{ownerC.Peer: ownerC, replicaC.Peer: replicaC}
	gate := func(s network.Stream) (ring.Node, bool) {
		return ring.Node{Contact: byPeer[s.Conn().RemotePeer().String()]}, true
	}
	open := func(s identity.Signer, v archive.Verifier) *archive.Store {
		st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, Signer: s, Verifier: v})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	// The owner's signature checks are counted: the guard decodes and
	// verifies a record once, whether it holds or imports it.
	checks := &countingVerifier{Verifier: identity.Verifier{}}
	os_, rs, scratch := open(signer(0), checks), open(signer(1), identity.Verifier{}), open(signer(0), identity.Verifier{})
	// The owner's range is first the second half of (replica, owner]; it
	// grows to the whole of it later (a predecessor between them left).
	mid := replicate.Split(replicaV.ID, ownerV.ID, 2)[1]
	rr := &rangeRing{st: ring.Status{Vnodes: []ring.VnodeStatus{{Node: ownerV,
		Range: ring.Range{Start: mid, End: ownerV.ID, Known: true}, Successors: []ring.Node{replicaV}}}}}
	held, err := OpenHeld(t.TempDir(), HoldLimits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	owner := New(Config{Self: ownerC, Local: os_, Source: os_, Open: p2ptest.Opener(hs[0]), Gate: gate,
		Held: held, Check: os_.CheckImport, Ring: rr})
	var mu sync.Mutex
	var rechecked []string
	owner.OnRecheck(func(_ context.Context, urls []string) error {
		mu.Lock()
		defer mu.Unlock()
		rechecked = append(rechecked, urls...)
		return nil
	})
	roles := succsRing(func(context.Context, id.ID, int) ([]ring.Node, error) { return []ring.Node{ownerV, replicaV}, nil })
	replica := New(Config{Self: replicaC, Local: rs, Source: rs, Open: p2ptest.Opener(hs[1]), Gate: gate, Ring: roles})
	hs[0].SetStreamHandler(Protocol, owner.Handle)
	hs[1].SetStreamHandler(Protocol, replica.Handle)

	urlIn := func(tag string, a, b id.ID) string {
		for i := 0; ; i++ {
			if u := fmt.Sprintf("http://site.example/%s/%d", tag, i); id.InHalfOpen(id.OfString(u), a, b) {
				return u
			}
		}
	}
	put := func(st *archive.Store, u string, at time.Time, body string) archive.Version {
		v, _, err := st.Put(ctx, archive.Capture{URL: u, Time: at, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	holds := func(s *archive.Store, v archive.Version) bool {
		ok, err := s.Holds(ctx, v.Entry())
		return err == nil && ok
	}
	round := func() {
		t.Helper()
		if err := owner.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// The owner's history runs on a clock: its first round at t0, the
	// range's growth at t2; the captures after its first round at t1.
	t0 := time.Now().Add(-10 * time.Minute)
	t1, t2 := t0.Add(5*time.Minute), t0.Add(6*time.Minute)
	var clock time.Time
	owner.owned.now = func() time.Time { return clock }
	clock = t0
	before := put(rs, urlIn("before", mid, ownerV.ID), t0.Add(-time.Hour), "<p>fetched while the owner was away</p>")
	old := put(rs, urlIn("old", mid, ownerV.ID), t0.Add(-72*time.Hour), "<p>three days ago</p>")
	round()
	if !holds(os_, before) || !holds(os_, old) {
		t.Fatalf("captures made before the owner owned their keys not imported: %v %v; %+v", holds(os_, before), holds(os_, old), owner.Stats())
	}
	if n := checks.n.Swap(0); n != 2 {
		t.Errorf("the first round checked %d signatures for its 2 records", n)
	}

	// After the first round: the replica's made-up capture, and the
	// owner's own capture, which the owner lost and the replica holds.
	later := t1
	forged := put(rs, urlIn("forged", mid, ownerV.ID), later, "<p>words the site never served</p>")
	own := put(scratch, urlIn("own", mid, ownerV.ID), later, "<p>the owner's own capture</p>")
	data, err := scratch.ReadFile(ctx, own.Entry())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rs.Import(ctx, own.Entry().Name(), data); err != nil {
		t.Fatal(err)
	}
	// A key of the part the range gains later, captured now.
	gained := put(rs, urlIn("gained", replicaV.ID, mid), later, "<p>fetched by the range's owner then</p>")
	checks.n.Store(0)
	round()
	if n := checks.n.Load(); n != 2 {
		t.Errorf("the second round checked %d signatures for its 2 records (one held, one imported)", n)
	}
	st := owner.Stats()
	if holds(os_, forged) || !holds(os_, own) || st.HandOff.Guarded != 1 || st.HandOff.Held != 1 {
		t.Fatalf("second round: forged stored %v, own stored %v, hand-off %+v", holds(os_, forged), holds(os_, own), st.HandOff)
	}
	mu.Lock()
	got := slices.Clone(rechecked)
	mu.Unlock()
	if !slices.Equal(got, []string{forged.URL}) {
		t.Fatalf("URLs queued for the owner's fetch: %v, want %s", got, forged.URL)
	}
	if !owner.PushIdle() || st.Push.Queued != 0 {
		t.Fatalf("a held record queued for the push: %+v", st.Push)
	}
	skipped := st.Syncs.Skipped
	round()
	if st := owner.Stats(); st.Syncs.Skipped != skipped+1 || st.HandOff.Guarded != 1 || st.HandOff.Holds != 1 {
		t.Fatalf("third round: skipped %d (before %d), hand-off %+v", st.Syncs.Skipped, skipped, st.HandOff)
	}

	// The range grows: the gained key's capture predates its ownership.
	rr.setStart(replicaV.ID)
	clock = t2
	round()
	if !holds(os_, gained) || owner.Stats().HandOff.Guarded != 1 {
		t.Fatalf("a capture made before its key joined the range: stored %v, %+v", holds(os_, gained), owner.Stats().HandOff)
	}

	// The owner's own fetch finds the held payload: released.
	owner.Confirm(ctx, forged.URL, 200, forged.Digest)
	if !holds(os_, forged) || owner.Stats().HandOff.Released != 1 || owner.Stats().HandOff.Held != 0 {
		t.Fatalf("after the owner's fetch: stored %v, %+v", holds(os_, forged), owner.Stats().HandOff)
	}
}

// countingVerifier is a Verifier that counts its checks.
type countingVerifier struct {
	archive.Verifier
	n atomic.Int64
}

func (v *countingVerifier) Verify(peer string, msg, sig []byte) error {
	v.n.Add(1)
	return v.Verifier.Verify(peer, msg, sig)
}

// ed25519Hosts returns n linked hosts of a mock network with Ed25519 keys
// (their peer ids embed their public keys, as a node's do), and the keys.
func ed25519Hosts(t *testing.T, n int) ([]host.Host, []crypto.PrivKey) {
	t.Helper()
	mn := mocknet.New()
	t.Cleanup(func() { mn.Close() })
	hs, keys := make([]host.Host, n), make([]crypto.PrivKey, n)
	for i := range hs {
		sk, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h, err := mn.AddPeer(sk, ma.StringCast(fmt.Sprintf("/ip4/127.0.0.%d/tcp/4001", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		hs[i], keys[i] = h, sk
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	return hs, keys
}
