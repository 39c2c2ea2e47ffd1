package ring

import (
	"context"
	"errors"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Op names a ring RPC.
type Op string

// The ring protocol's operations.
const (
	// OpPing asks whether the real node is alive. Reply: empty.
	OpPing Op = "ping"
	// OpStep is one step of an iterative lookup for Key. Reply: Done with
	// Owners (the answering vnode's successor list, From set to that vnode)
	// when Key lies between a local vnode and its successor, otherwise Nodes
	// = the preceding-node list (closest preceding Key first), From = the
	// local vnode closest preceding Key, and possibly Owners = the entries
	// of a successor list from the first one at or after Key (a fallback).
	OpStep Op = "step"
	// OpNeighbors asks vnode To for its predecessor (Pred) and successor
	// list (Nodes).
	OpNeighbors Op = "neighbors"
	// OpNotify tells vnode To that From believes it is To's predecessor.
	OpNotify Op = "notify"
	// OpSuggest tells vnode To that From has just joined as its successor.
	OpSuggest Op = "suggest"
	// OpLeave tells vnode To that From is leaving: From's predecessor is
	// Pred and its successor list is Nodes.
	OpLeave Op = "leave"
	// OpShare asks a real node for its part of the circle. Reply: its
	// virtual servers (Nodes) and their predecessors (Owners), for those
	// whose predecessor it knows.
	OpShare Op = "share"
)

// Message is the single request and reply type of the ring protocol.
// Unused fields are left zero. Handlers must not retain or modify a
// request's slices; callers must not modify a reply's.
type Message struct {
	Op     Op     `json:"op"`
	To     id.ID  `json:"to"`
	From   *Node  `json:"from,omitempty"`
	Key    id.ID  `json:"key"`
	Pred   *Node  `json:"pred,omitempty"`
	Nodes  []Node `json:"nodes,omitempty"`
	Owners []Node `json:"owners,omitempty"`
	Done   bool   `json:"done,omitempty"`
	// Err is set in a reply when the remote ring refused the request; the
	// node is alive. ErrCodeNoVnode means vnode To is not (or no longer) there.
	Err string `json:"err,omitempty"`
}

// Remote error codes carried in Message.Err.
const (
	ErrCodeNoVnode = "no-vnode"
	ErrCodeRefused = "refused"
	ErrCodeBadOp   = "bad-op"
)

// Handler serves one incoming request. from is the peer id of the caller
// as authenticated by the transport (on libp2p, the Noise handshake). A
// handler never returns nil and never calls out through the transport
// except to Verify.
type Handler func(ctx context.Context, from string, m *Message) *Message

// Transport carries ring messages between real nodes. Implementations:
// ring/p2p (libp2p streams) and ring/memnet (in-memory, for tests and
// simulations). They are tested by the shared suite in ring/ringtest.
type Transport interface {
	// Call sends m to the real node at `to` and returns its reply. An error
	// means the node could not be reached or did not answer in time
	// (the ring treats it as a failure of that node). The transport must
	// authenticate that the node reached is to.Peer.
	Call(ctx context.Context, to Contact, m *Message) (*Message, error)
	// Verify checks that the node listening at c.Addr, reached there
	// directly, authenticates as c.Peer: the thesis's nonce check. It
	// returns an error wrapping ErrBadPeer when the address answers as
	// someone else, or a transport error when it does not answer.
	Verify(ctx context.Context, c Contact) error
	// Handle installs the handler for incoming requests, replacing any
	// previous one; nil removes it.
	Handle(h Handler)
}

// NeighborProtector is optionally implemented by a Transport that can
// shield connections to ring neighbours from trimming. The ring calls it
// after each maintenance round with the full current set of neighbour
// peer ids.
type NeighborProtector interface {
	ProtectNeighbors(peers []string)
}

// ErrUnreachable is what transports wrap when a node does not answer.
var ErrUnreachable = errors.New("ring: node unreachable")

// Clock is the time source of the ring. Tests inject a fake clock
// (memnet.Clock); nil in Config means real time.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
