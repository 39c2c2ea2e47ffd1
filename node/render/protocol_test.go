package render

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// countingCapturer counts renders and fails them.
type countingCapturer struct{ n atomic.Int64 }

func (c *countingCapturer) Capture(context.Context, string) (*capture.Result, error) {
	c.n.Add(1)
	return nil, errors.New("no browser here")
}

// TestRenderOnlyForOwner: a member with the role renders only the pages
// the asking member owns; another request is answered with a refusal,
// counted as outside the member's role, and starts no browser.
func TestRenderOnlyForOwner(t *testing.T) {
	hs := p2ptest.Hosts(t, 2)
	asker, renderer := hs[0], hs[1]
	var owner atomic.Value // peer id string the renderer's lookup answers
	var refused atomic.Int64
	cc := &countingCapturer{}
	cfg := Config{Self: renderer.ID().String(), Capturer: cc, Chooser: &Chooser{},
		Owner: func(context.Context, id.ID) (ring.Node, error) {
			return ring.Node{Contact: ring.Contact{Peer: owner.Load().(string), Addr: "owner"}}, nil
		},
		Owns:      func(string) bool { return false },
		Renderers: func() []ring.Contact { return nil },
		HasRole:   func(string) bool { return false },
		Open: func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error) {
			pid, err := peer.Decode(c.Peer)
			if err != nil {
				return nil, err
			}
			return asker.NewStream(ctx, pid, p)
		}}
	if _, err := New(cfg); err == nil {
		t.Fatal("New without a Store")
	}
	cfg.Store = nopStore{}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k := kit.New(kit.Config{Host: renderer,
		Gate: func(s network.Stream) (ring.Node, error) {
			return ring.Node{Contact: ring.Contact{Peer: s.Conn().RemotePeer().String()}}, nil
		},
		RefuseRole: func(ring.Node, string, error) { refused.Add(1) }})
	k.MustHandle(svc.RenderSpec())
	to := ring.Contact{Peer: renderer.ID().String(), Addr: "renderer"}
	page := "http://a.example/app"

	owner.Store("someone-else")
	rep, err := svc.ask(context.Background(), to, page)
	if err != nil || !strings.Contains(rep.Err, "outside the sender's role") || refused.Load() != 1 || cc.n.Load() != 0 {
		t.Fatalf("a render of another member's page: %+v, %v; %d refusals, %d renders", rep, err, refused.Load(), cc.n.Load())
	}
	owner.Store(asker.ID().String())
	rep, err = svc.ask(context.Background(), to, page)
	if err != nil || !strings.Contains(rep.Err, "no browser here") || cc.n.Load() != 1 {
		t.Fatalf("a render of the asker's page: %+v, %v; %d renders", rep, err, cc.n.Load())
	}
}

// nopStore is a Store that holds nothing.
type nopStore struct{ Store }
