package replication

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
)

// TestDroppedPushRepaired: records a full push queue drops reach the
// replica without a round: once the queue drains, the owner asks the
// replica to pull the range (Push.Repairs), and the replica copies only
// what it lacks. An owner and one replica on a mock network, rounds off.
func TestDroppedPushRepaired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := newPushPair(t, func() bool { return true })
	owner, replica, os, rs, rng := p.owner, p.replica, p.os, p.rs, p.rng
	owner.queueLen = 4

	// 24 versions stored before the push starts: 20 of them dropped.
	es := putInRange(ctx, t, os, rng, 24)
	if st := owner.Stats().Push; st.Dropped != 20 {
		t.Fatalf("push counters before the push: %+v", st)
	}
	done := make(chan struct{}, 2)
	go func() { owner.Push(ctx); done <- struct{}{} }()
	go func() { replica.Work(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	testwait.For(t, "every version on the replica", 30*time.Second, func() error {
		if n, _ := holding(ctx, rs, es); n < len(es) {
			return fmt.Errorf("%d of %d; owner %+v (%s), replica %s", n, len(es), owner.Stats().Push, owner.Stats().LastError, replica.Stats().LastError)
		}
		// The records land before the counters: the owner counts its
		// repair once the replica answers, the replica its sync once
		// the sync returns.
		if st := owner.Stats().Push; st.Repairs+st.RepairsFailed == 0 {
			return fmt.Errorf("owner has not counted its repair request: %+v", st)
		}
		if syncs := replica.Stats().Syncs; syncs.Syncs == 0 {
			return fmt.Errorf("replica has not counted its repair sync: %+v", syncs)
		}
		return nil
	})
	st := owner.Stats().Push
	if st.Copies != 4 || st.Repairs != 1 || st.RepairsFailed != 0 {
		t.Fatalf("owner's push: %+v", st)
	}
	if syncs := replica.Stats().Syncs; syncs.Pulled != 20 {
		t.Fatalf("replica's repair sync pulled %d, want the 20 dropped: %+v", syncs.Pulled, syncs)
	}
}

// pushPair is an owner and its one replica on a mock network: the
// owner's range is (replica, owner]; the owner admits the replica's
// streams, the replica the owner's while admit says so.
type pushPair struct {
	owner, replica   *Replicator
	os, rs           *archive.Store
	ownerV, replicaV ring.Node
	rng              ring.Range
}

func newPushPair(t *testing.T, admit func() bool) *pushPair {
	hs := p2ptest.Hosts(t, 2)
	ownerC := ring.Contact{Peer: hs[0].ID().String(), Addr: "127.0.0.1:4001"}
	replicaC := ring.Contact{Peer: hs[1].ID().String(), Addr: "127.0.0.2:4001"}
	p := &pushPair{ownerV: ring.Node{ID: ring.VirtualID(ownerC.Addr, 0), Contact: ownerC},
		replicaV: ring.Node{ID: ring.VirtualID(replicaC.Addr, 0), Contact: replicaC}}
	p.rng = ring.Range{Start: p.replicaV.ID, End: p.ownerV.ID, Known: true}
	p.os, p.rs = openStore(t), openStore(t)
	p.owner = New(Config{Self: ownerC, Local: p.os, Source: p.os, Open: p2ptest.Opener(hs[0]),
		Gate: func(network.Stream) (ring.Node, bool) { return ring.Node{Contact: replicaC}, true },
		Ring: statusRing{ring.Status{Vnodes: []ring.VnodeStatus{{Node: p.ownerV, Range: p.rng, Successors: []ring.Node{p.replicaV}}}}}})
	p.replica = New(Config{Self: replicaC, Local: p.rs, Source: p.rs, Open: p2ptest.Opener(hs[1]),
		Gate: func(network.Stream) (ring.Node, bool) { return ring.Node{Contact: ownerC}, admit() },
		Ring: succsRing(func(context.Context, id.ID, int) ([]ring.Node, error) { return []ring.Node{p.ownerV, p.replicaV}, nil })})
	hs[0].SetStreamHandler(Protocol, p.owner.Handle)
	hs[1].SetStreamHandler(Protocol, p.replica.Handle)
	p.os.OnAdd(p.owner.Notify)
	return p
}

// openStore opens an archive in a temporary directory, closed when the
// test ends.
func openStore(t *testing.T) *archive.Store {
	t.Helper()
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// holding returns how many of es s holds, and the first it lacks (nil if
// none), with the error its look-up returned.
func holding(ctx context.Context, s *archive.Store, es []archive.Entry) (n int, lacks error) {
	for _, e := range es {
		if ok, err := s.Holds(ctx, e); err == nil && ok {
			n++
		} else if lacks == nil {
			lacks = fmt.Errorf("%s missing (%v)", e.Key.Short(), err)
		}
	}
	return n, lacks
}

// putInRange stores n small pages of rng in s and returns their entries.
func putInRange(ctx context.Context, t *testing.T, s *archive.Store, rng ring.Range, n int) []archive.Entry {
	var es []archive.Entry
	for i := 0; len(es) < n; i++ {
		u := fmt.Sprintf("http://h.example/p%d", i)
		if !rng.Contains(id.OfString(u)) {
			continue
		}
		v, _, err := s.Put(ctx, archive.Capture{URL: u, Time: time.Now(), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprintf("<p>page %d</p>", i))})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, v.Entry())
	}
	return es
}

// TestPushCountsShortDispatch: a record whose range's successor list
// names fewer than k-1 other real nodes goes to those it names and is
// counted in PushStats.Short (k = 3 here, one replica), so that an
// operator sees copies the push could not make; with k = 2 none is.
func TestPushCountsShortDispatch(t *testing.T) {
	for _, k := range []int{2, 3} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p := newPushPair(t, func() bool { return true })
			p.owner.cfg.K = k
			done := make(chan struct{}, 2)
			go func() { p.owner.Push(ctx); done <- struct{}{} }()
			go func() { p.replica.Work(ctx); done <- struct{}{} }()
			defer func() { cancel(); <-done; <-done }()
			es := putInRange(ctx, t, p.os, p.rng, 5)
			testwait.For(t, "the replica holds every version", 30*time.Second, func() error {
				_, lacks := holding(ctx, p.rs, es)
				return lacks
			})
			want := int64(0)
			if k == 3 {
				want = int64(len(es))
			}
			if got := p.owner.Stats().Push.Short; got != want {
				t.Fatalf("push short %d, want %d", got, want)
			}
		})
	}
}

// TestListReplicas: the replicas a successor list names are its first
// k-1 distinct real nodes other than this one; with k = 1 there are none
// (the owner alone holds its range), and listsName holds only when every
// known range's list names k-1.
func TestListReplicas(t *testing.T) {
	node := func(peer string, i int) ring.Node {
		c := ring.Contact{Peer: peer, Addr: "127.0.0.1:1"}
		return ring.Node{ID: ring.VirtualID(peer, i), Contact: c}
	}
	self, a, b, c := node("self", 1), node("a", 0), node("b", 0), node("c", 0)
	v := ring.VnodeStatus{Node: node("self", 0), Range: ring.Range{Known: true},
		Successors: []ring.Node{a, node("a", 1), self, b, c}}
	for k, want := range map[int][]string{1: nil, 2: {"a"}, 3: {"a", "b"}, 4: {"a", "b", "c"}, 5: {"a", "b", "c"}} {
		r := New(Config{Self: self.Contact, K: k})
		var got []string
		for _, c := range r.listReplicas(v) {
			got = append(got, c.Peer)
		}
		if !slices.Equal(got, want) {
			t.Errorf("k=%d: replicas %v, want %v", k, got, want)
		}
		unknown := ring.VnodeStatus{Node: node("self", 2)} // a range not yet known is not waited for
		if names := r.listsName([]ring.VnodeStatus{v, unknown}); names != (k <= 4) {
			t.Errorf("k=%d: lists name k-1 replicas: %v", k, names)
		}
	}
}
