package politeness

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// deadRing is a two-node ring whose other node, "dead", owns every key
// and cannot be reached.
type deadRing struct{ self, dead ring.Contact }

func (r deadRing) Owns(id.ID) bool { return false }

func (r deadRing) Lookup(context.Context, id.ID) (ring.Node, error) {
	return ring.Node{Contact: r.dead}, nil
}

func (r deadRing) Successors(context.Context, id.ID, int) ([]ring.Node, error) {
	return []ring.Node{{Contact: r.dead}}, nil
}

func (r deadRing) Disowned(id.ID, ring.Contact) {}

func (r deadRing) Status() ring.Status {
	return ring.Status{Self: r.self, Vnodes: []ring.VnodeStatus{{Successors: []ring.Node{{Contact: r.dead}}}}}
}

// unreachable refuses every stream.
type unreachable struct{}

var errUnreachable = errors.New("unreachable")

func (unreachable) Exchange(context.Context, ring.Contact, protocol.ID, func(network.Stream, *bufio.Reader) error) error {
	return errUnreachable
}

// TestOwnerDown: when the owner of a robots.txt or of a host's schedule
// does not answer, a node takes robots.txt from its own crawler (whose
// cache bounds what that costs the site), and paces the host with the
// equal-share fallback sized from twice its estimate of the ring.
func TestOwnerDown(t *testing.T) {
	var local atomic.Int64
	self, dead := ring.Contact{Peer: "self"}, ring.Contact{Peer: "dead"}
	p := New(Config{
		Rate:  50,
		Self:  self,
		Ring:  deadRing{self, dead},
		Peers: unreachable{},
		Local: func(_ context.Context, origin string) (crawl.RobotsRecord, error) {
			local.Add(1)
			return crawl.RobotsRecord{Status: http.StatusOK, Body: []byte("User-agent: *\nDisallow: /private/\n")}, nil
		},
	})
	ctx := context.Background()
	for round := range 3 {
		rec, err := p.Robots(ctx, "http://example.org")
		if err != nil || rec.Status != http.StatusOK {
			t.Fatalf("round %d: %+v, %v", round, rec, err)
		}
	}
	st := p.Stats()
	if local.Load() != 3 || st.RobotsFallback != 3 || st.RobotsAsked != 3 {
		t.Errorf("local %d, fallbacks %d, asked %d; want 3 each", local.Load(), st.RobotsFallback, st.RobotsAsked)
	}
	if err := p.Wait(ctx, "example.org", 0); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Failures != 1 || st.FallbackWaits != 1 {
		t.Errorf("budget with a dead owner: %d failures, %d fallback waits; want 1 and 1", st.Failures, st.FallbackWaits)
	}
	if est := p.nodeEstimate(); est < 4 {
		t.Errorf("fallback node estimate %d in a 2-node ring, want at least twice the ring", est)
	}
}
