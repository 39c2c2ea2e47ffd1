package sim

import (
	"context"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// WireCounter counts the bytes the ring's messages would take on the
// wire while it is on: each request and reply sized as ring/p2p sends
// them, one length-prefixed JSON frame (wire.WriteJSON) per message,
// with every node's peer id counted at PeerIDLen bytes (a simulated
// node's is shorter). Stream set-up (multistream, Noise, yamux) is not
// counted. A simulation
// drives it from one goroutine; it is not safe for concurrent use.
type WireCounter struct {
	On    bool
	Calls int // calls made while on, answered or not
	Bytes int // request and reply frames of those calls
}

// Wrap returns t counting into w: Config.Wrap.
func (w *WireCounter) Wrap(t ring.Transport) ring.Transport { return &counted{Transport: t, w: w} }

// Reset zeroes the counts.
func (w *WireCounter) Reset() { w.Calls, w.Bytes = 0, 0 }

type counted struct {
	ring.Transport
	w *WireCounter
}

func (c *counted) Call(ctx context.Context, to ring.Contact, m *ring.Message) (*ring.Message, error) {
	rep, err := c.Transport.Call(ctx, to, m)
	if c.w.On {
		c.w.Calls++
		c.w.Bytes += messageSize(m)
		if err == nil {
			c.w.Bytes += messageSize(rep)
		}
	}
	return rep, err
}

// PeerIDLen is the length of a libp2p peer id of an Ed25519 key in its
// text form ("12D3KooW…"), the ids herod nodes have.
const PeerIDLen = 52

// messageSize returns the frame size of m with real-length peer ids.
func messageSize(m *ring.Message) int {
	if m == nil {
		return 0
	}
	n := FrameSize(m)
	fix := func(x ring.Node) { n += PeerIDLen - len(x.Peer) }
	for _, p := range []*ring.Node{m.From, m.Pred} {
		if p != nil {
			fix(*p)
		}
	}
	for _, x := range m.Nodes {
		fix(x)
	}
	for _, x := range m.Owners {
		fix(x)
	}
	return n
}

// FrameSize returns the bytes of v as one wire.WriteJSON frame (length
// prefix and JSON), or 0 if v does not encode.
func FrameSize(v any) int {
	var n byteCount
	if wire.WriteJSON(&n, v) != nil {
		return 0
	}
	return int(n)
}

type byteCount int

func (n *byteCount) Write(p []byte) (int, error) {
	*n += byteCount(len(p))
	return len(p), nil
}
