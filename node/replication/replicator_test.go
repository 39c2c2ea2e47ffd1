package replication

import (
	"context"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// succsRing is a Ring that answers Successors with a function and has no
// local virtual servers.
type succsRing func(ctx context.Context, key id.ID, k int) ([]ring.Node, error)

func (f succsRing) Status() ring.Status { return ring.Status{} }

func (f succsRing) Successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error) {
	return f(ctx, key, k)
}

// TestPullRequestVerification: accept's rule on a fake ring of three real
// nodes where "owner" runs virtual server B (range (pred, B]) and this
// node ("me") replicates it.
func TestPullRequestVerification(t *testing.T) {
	addr := "127.0.0.1:4001"
	ownerC := ring.Contact{Peer: "owner", Addr: addr}
	b := ring.VirtualID(addr, 2)
	pred := id.OfString("pred")
	ownerV := ring.Node{ID: b, Contact: ownerC, Index: 2}
	good := replicate.Request{Op: replicate.OpPull, A: pred, B: b,
		From: replicate.Contact{Peer: "owner", Addr: addr, Index: 2}}
	inside := good // a part of B's range: allowed
	inside.A = id.OfString("inside")
	outside := good
	outside.A = id.OfString("outside")
	whole := good
	whole.A = b
	wrongIndex := good
	wrongIndex.From.Index = 3
	badAddr := good
	badAddr.From.Addr = "localhost:4001"
	other := good
	other.From = replicate.Contact{Peer: "other", Addr: "127.0.0.1:4002", Index: 0}
	other.B = ring.VirtualID("127.0.0.1:4002", 0)
	notReplica := false
	succs := func(_ context.Context, key id.ID, k int) ([]ring.Node, error) {
		switch key {
		case pred.AddPow2(0), id.OfString("inside").AddPow2(0):
			rest := ring.Node{Contact: ring.Contact{Peer: "me", Addr: "127.0.0.1:4003"}}
			if notReplica {
				rest.Peer = "third"
			}
			return []ring.Node{ownerV, rest}, nil
		default: // (outside, B] and (B, B] hold other virtual servers
			return []ring.Node{{ID: id.OfString("someone"), Contact: ring.Contact{Peer: "x", Addr: "127.0.0.1:9"}}}, nil
		}
	}
	r := New(Config{Self: ring.Contact{Peer: "me", Addr: "127.0.0.1:4003"}, Ring: succsRing(succs)})
	r.jobs = make(chan pullJob, 3)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.roles.now = func() time.Time { return now }
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		sender  ring.Node
		req     replicate.Request
		notRepl bool
		wantErr bool
		queued  int
	}{
		{"owner's own range", ownerV, good, false, false, 1},
		{"repeated: queued once", ownerV, good, false, false, 1},
		{"part of the owner's range", ownerV, inside, false, false, 2},
		{"range wider than the owner's", ownerV, outside, false, true, 2},
		{"whole ring (A == B)", ownerV, whole, false, true, 2},
		{"sent by another member", ring.Node{Contact: ring.Contact{Peer: "intruder", Addr: "127.0.0.1:4009"}}, good, false, true, 2},
		{"range not ending at the vnode", ownerV, wrongIndex, false, true, 2},
		{"address not canonical", ownerV, badAddr, false, true, 2},
		{"this node is no replica", ownerV, inside, true, true, 2},
		{"another member's range, claimed by the owner", ownerV, other, false, true, 2},
	} {
		notReplica = tc.notRepl
		if tc.notRepl {
			delete(r.queued, pullJob{a: inside.A, b: b, from: ownerC})
			now = now.Add(roleTTL) // the role checked earlier is asked again
		}
		err := r.accept(ctx, tc.sender, tc.req)
		if (err != nil) != tc.wantErr || len(r.jobs) != tc.queued {
			t.Errorf("%s: err %v, %d queued; want error %v, %d queued", tc.name, err, len(r.jobs), tc.wantErr, tc.queued)
		}
	}
	st := r.st
	if st.PullRequests != 2 || st.Refused != 7 {
		t.Errorf("counters: %+v", st)
	}
}

// TestRoleCheckCached: an owner's role that passed is not asked of the
// ring again for roleTTL, a refusal is asked every time, and after
// roleTTL a change of the ring is seen.
func TestRoleCheckCached(t *testing.T) {
	addr := "127.0.0.1:4001"
	ownerC := ring.Contact{Peer: "owner", Addr: addr}
	b := ring.VirtualID(addr, 2)
	ownerV := ring.Node{ID: b, Contact: ownerC, Index: 2}
	pred := id.OfString("pred")
	replica, asked := true, 0
	succs := func(_ context.Context, key id.ID, k int) ([]ring.Node, error) {
		asked++
		rest := ring.Node{Contact: ring.Contact{Peer: "third", Addr: "127.0.0.1:4004"}}
		if replica {
			rest.Peer = "me"
		}
		return []ring.Node{ownerV, rest}, nil
	}
	r := New(Config{Self: ring.Contact{Peer: "me", Addr: "127.0.0.1:4003"}, Ring: succsRing(succs)})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.roles.now = func() time.Time { return now }
	ctx := context.Background()
	for i, step := range []struct {
		advance   time.Duration
		replica   bool
		wantErr   bool
		wantAsked int
	}{
		{0, true, false, 1},                         // checked
		{roleTTL - time.Nanosecond, true, false, 1}, // cached
		{0, false, false, 1},                        // cached: the change is not seen yet
		{time.Nanosecond, false, true, 2},           // expired: refused
		{0, false, true, 3},                         // refusals are not cached
		{0, true, false, 4},                         // checked again
		{0, true, false, 4},                         // cached
	} {
		now, replica = now.Add(step.advance), step.replica
		err := r.pullRole(ctx, pred, ownerV)
		if (err != nil) != step.wantErr || asked != step.wantAsked {
			t.Errorf("step %d: err %v, ring asked %d times; want error %v, %d", i, err, asked, step.wantErr, step.wantAsked)
		}
	}
}
