package kit

import (
	"bufio"
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Request is one stream being served: the member it comes from, and
// reads bounded by its protocol's limits. A Request is used by its
// handler's goroutine only.
type Request struct {
	// Member is the verified ring member the stream comes from.
	Member ring.Node

	kit  *Kit
	spec *Spec
	s    *limitedStream
	r    *bufio.Reader
}

// Stream returns the stream, for replies, deadlines and CloseRead. Its
// reads are bounded by the protocol's MaxRequest; read frames through
// ReadFrame and ReadJSON, which buffer.
func (q *Request) Stream() network.Stream { return q.s }

// Peer returns the peer the stream comes from.
func (q *Request) Peer() peer.ID { return q.s.Conn().RemotePeer() }

// ReadFrame reads one frame of at most max bytes, and never more than the
// protocol's MaxFrame (max <= 0 means MaxFrame). Every failure wraps
// ErrBadFrame.
func (q *Request) ReadFrame(max int) ([]byte, error) {
	b, err := wire.ReadFrame(q.r, q.frameLimit(max))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	return b, nil
}

// ReadJSON reads one frame as ReadFrame does and decodes it into v.
// Every failure wraps ErrBadFrame.
func (q *Request) ReadJSON(max int, v any) error {
	if err := wire.ReadJSON(q.r, q.frameLimit(max), v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	return nil
}

func (q *Request) frameLimit(max int) int {
	if max <= 0 || max > q.spec.MaxFrame {
		return q.spec.MaxFrame
	}
	return max
}

// Reply writes v as one JSON frame.
func (q *Request) Reply(v any) error { return wire.WriteJSON(q.s, v) }

// Refuse reports a member's request outside its role (it wraps the
// serving package's ErrRole): counted and logged by the node. The
// handler still answers as its protocol says.
func (q *Request) Refuse(err error) {
	if q.kit.cfg.RefuseRole != nil {
		q.kit.cfg.RefuseRole(q.Member, string(q.spec.ID), err)
	}
}

// Raw adapts a handler that reads its stream itself: it gets the stream
// behind the kit's gate, deadline, slots and MaxRequest bound, and closes
// it when done.
func Raw(h func(s network.Stream)) func(ctx context.Context, q *Request) error {
	return func(_ context.Context, q *Request) error {
		h(q.Stream())
		return nil
	}
}
