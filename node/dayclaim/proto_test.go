package dayclaim

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/claim"
)

// twoHosts returns two linked hosts of a mock network and an Opener
// from the first.
func twoHosts(t *testing.T) (host.Host, host.Host, Opener) {
	t.Helper()
	hs := p2ptest.Hosts(t, 2)
	return hs[0], hs[1], p2ptest.Opener(hs[0])
}

// TestTransportClaim: a claim travels as one JSON frame each way.
func TestTransportClaim(t *testing.T) {
	_, b, open := twoHosts(t)
	b.SetStreamHandler(ClaimProtocol, func(s network.Stream) {
		defer s.Close()
		var q claim.Request
		if err := wire.ReadJSON(bufio.NewReader(s), maxClaimFrame, &q); err != nil || q.URL != "http://a.example/" {
			s.Reset()
			return
		}
		_ = wire.WriteJSON(s, claim.Reply{Taken: true})
	})
	tr := Transport{Exchange: kit.OpenExchanger(open)}
	rep, err := tr.Claim(context.Background(), ring.Node{Contact: ring.Contact{Peer: b.ID().String()}}, claim.Request{URL: "http://a.example/"})
	if err != nil || !rep.Taken {
		t.Fatalf("claim: %+v, %v", rep, err)
	}
}

// noVnodes is a claim.Ring without local virtual servers.
type noVnodes struct{}

func (noVnodes) Vnodes() []ring.Node                 { return nil }
func (noVnodes) Predecessor(id.ID) (ring.Node, bool) { return ring.Node{}, false }

// answerer is the claim service of host b on day 1, registered through
// a kit behind gate; refusals go to refuse.
func answerer(b host.Host, open Opener, gate func(network.Stream) (ring.Node, error), refuse func(ring.Node, string, error)) *Service {
	sv := &Service{
		Claims: claim.New(claim.Config{Peer: b.ID().String(), Ring: noVnodes{}, Transport: Transport{Exchange: kit.OpenExchanger(open)}}),
		Self:   b.ID().String(),
		Day:    func() int64 { return 1 },
	}
	k := kit.New(kit.Config{Host: b, Gate: gate, RefuseRole: refuse})
	k.MustHandle(sv.ClaimSpec())
	k.MustHandle(sv.HandoverSpec())
	return sv
}

// TestHandoverRefusals: a handover for another member's virtual server
// is refused as outside the sender's role, and the refusal reaches the
// sender as a remote error; a non-member's stream is reset.
func TestHandoverRefusals(t *testing.T) {
	a, b, open := twoHosts(t)
	member := true
	var refused []string
	answerer(b, open, func(s network.Stream) (ring.Node, error) {
		if !member {
			return ring.Node{}, errors.New("not a member")
		}
		return ring.Node{Contact: ring.Contact{Peer: a.ID().String(), Addr: "127.0.0.1:4001"}}, nil
	}, func(m ring.Node, proto string, err error) { refused = append(refused, proto) })
	from := &Service{Open: open}
	to := ring.Node{Contact: ring.Contact{Peer: b.ID().String()}}
	h := claim.Handover{Day: 1, Vnode: ring.Node{Contact: ring.Contact{Peer: "someone-else", Addr: "127.0.0.2:4001"}}, Keys: []id.ID{id.OfString("x")}}
	err := from.sendHandover(context.Background(), to, h)
	if !errors.Is(err, errRemote) || !strings.Contains(err.Error(), "outside the sender's role") {
		t.Fatalf("handover for another member's vnode: %v", err)
	}
	if len(refused) != 1 || refused[0] != string(HandoverProtocol) {
		t.Fatalf("refusals counted: %q", refused)
	}
	member = false
	if err := from.sendHandover(context.Background(), to, h); err == nil || errors.Is(err, errRemote) {
		t.Fatalf("a non-member's handover: %v, want the stream reset", err)
	}
}

// TestClaimRefusedByGate: a claim whose stream the former owner's trust
// gate resets reaches the claimer as claim.ErrRefused: it is asked again
// for longer, not fetched after three tries.
func TestClaimRefusedByGate(t *testing.T) {
	a, b, open := twoHosts(t)
	answerer(b, open, func(s network.Stream) (ring.Node, error) {
		return ring.Node{}, errors.New("not a member")
	}, nil)
	tr := Transport{Exchange: kit.OpenExchanger(open)}
	q := claim.Request{URL: "http://site.example/", Day: 1, Vnode: ring.Node{Contact: ring.Contact{Peer: a.ID().String(), Addr: "127.0.0.1:4001"}}}
	_, err := tr.Claim(context.Background(), ring.Node{Contact: ring.Contact{Peer: b.ID().String()}}, q)
	if !errors.Is(err, claim.ErrRefused) {
		t.Fatalf("claim reset by the gate: %v, want claim.ErrRefused", err)
	}
}
