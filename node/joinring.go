package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/sec"

	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// joinDialTimeout bounds the first dial of each --join member.
const joinDialTimeout = 15 * time.Second

// UnreachableError reports a --join member this node could not dial.
// Its message is one line: "cannot reach 127.0.0.99:4001 (connection
// refused)".
type UnreachableError struct {
	Addr string // the member's ring address
	Err  error  // the dial's error, libp2p's whole chain
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s (%s)", e.Addr, DialReason(e.Err))
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// DialReason names the cause of a failed libp2p dial in a few words:
// "connection refused", "no answer within 15s", "no route to host", or
// the last line of libp2p's message.
func DialReason(err error) string {
	var mismatch sec.ErrPeerIDMismatch
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return fmt.Sprintf("no answer within %s", joinDialTimeout)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.As(err, &mismatch):
		return "another peer answers at that address: check the /p2p/ id of --join"
	}
	msg := strings.TrimSpace(err.Error())
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	if i := strings.LastIndex(msg, "] "); strings.HasPrefix(msg, "* [") && i > 0 {
		msg = msg[i+2:]
	}
	return msg
}

// join starts the DHT from the configured members and joins the ring
// through the first of them that answers, or else through any herod node
// the DHT has found. Each member is dialled first: when none answers, the
// error lists each as an UnreachableError, one line.
func (n *Node) join(ctx context.Context) error {
	var contacts []ring.Contact
	var errs []error
	for _, a := range n.cfg.Join {
		c, err := ParseContact(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c.Peer == n.self.Peer {
			continue
		}
		if err := n.dial(ctx, c); err != nil {
			errs = append(errs, &UnreachableError{Addr: c.Addr, Err: err})
			continue
		}
		contacts = append(contacts, c)
	}
	if len(n.cfg.Join) > 0 && len(contacts) == 0 && len(errs) > 0 {
		return joinErrors(errs)
	}
	n.dht.Start(ctx, n.host, contacts, n.log)
	if len(n.cfg.Join) == 0 {
		return nil
	}
	tried := map[string]bool{}
	for _, c := range append(contacts, n.dht.Peers()...) {
		if tried[c.Peer] || c.Peer == n.self.Peer {
			continue
		}
		tried[c.Peer] = true
		if err := n.ring.Join(ctx, c); err != nil {
			errs = append(errs, fmt.Errorf("join via %s: %w", c.Addr, err))
			continue
		}
		n.joinedVia = c.Addr
		return nil
	}
	return fmt.Errorf("node start: %w", errors.Join(errs...))
}

// dial connects to member c, within joinDialTimeout.
func (n *Node) dial(ctx context.Context, c ring.Contact) error {
	ai, err := p2p.AddrInfo(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, joinDialTimeout)
	defer cancel()
	return n.host.Connect(ctx, ai)
}

// joinErrors joins the errors of the members that could not be reached
// in one line.
func joinErrors(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &JoinError{Msg: strings.Join(msgs, "; "), Errs: errs}
}

// JoinError reports that no --join member could be reached; Errs holds
// an UnreachableError (or a parse error) per member.
type JoinError struct {
	Msg  string
	Errs []error
}

func (e *JoinError) Error() string   { return e.Msg }
func (e *JoinError) Unwrap() []error { return e.Errs }

// JoinedVia returns the ring address of the member this node joined the
// ring through, "" for the first node of a ring (no --join).
func (n *Node) JoinedVia() string { return n.joinedVia }

// RingNodes returns how many real nodes of the ring this node knows to be
// up, itself included: those its ring page has heard of, or at least
// those its virtual servers link to.
func (n *Node) RingNodes() int {
	return max(n.Status().Members.Up, len(n.Members())+1)
}
