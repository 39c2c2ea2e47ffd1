package purge

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive/access"
)

// Order is a signed order to purge every capture Peer signed. Its JSON
// form is what nodes exchange and what the orders file holds.
type Order struct {
	Peer   string    `json:"peer"`   // whose captures go
	Issuer string    `json:"issuer"` // who signed the order
	Time   time.Time `json:"time"`   // when it was issued
	Sig    []byte    `json:"sig"`    // Issuer's signature of Message
	// Access, when set, makes the order a ring-wide access rule
	// (access.go) instead of a purge: Peer is empty.
	Access *access.Rule `json:"access,omitempty"`
	// Revoked withdraws the access rule of the same ID (access.go).
	Revoked bool `json:"revoked,omitempty"`
}

// Message returns what an order's signature covers.
func Message(o Order) []byte {
	if o.Access != nil {
		return accessMessage(o)
	}
	return []byte("herod-purge-v1\n" + o.Peer + "\n" + o.Issuer + "\n" + o.Time.UTC().Format(time.RFC3339Nano))
}

// key names what an order is about: the purged peer, or the access
// rule's ID. A Book keeps one order a key.
func (o Order) key() string {
	if o.Access != nil {
		return accessKeyPrefix + o.Access.ID()
	}
	return o.Peer
}

// Errors of purge orders.
var (
	// ErrUnauthorized refuses an order whose issuer this node does not
	// trust to purge that peer.
	ErrUnauthorized = errors.New("purge: order from an issuer this node does not trust")
	// ErrInvalid refuses a malformed or badly signed order.
	ErrInvalid = errors.New("purge: invalid order")
)

// Verifier checks an issuer's signature; archive.Verifier's method.
type Verifier interface {
	// Verify returns nil when sig is peer's signature of msg.
	Verify(peer string, msg, sig []byte) error
}

// Signer signs orders as this node.
type Signer interface {
	Peer() string
	Sign(msg []byte) ([]byte, error)
}

// NewOrder returns the order, signed by s, to purge peerID's captures.
func NewOrder(s Signer, peerID string, now time.Time) (Order, error) {
	if _, err := peer.Decode(peerID); err != nil {
		return Order{}, fmt.Errorf("purge: %q is not a peer id: %w", peerID, err)
	}
	o := Order{Peer: peerID, Issuer: s.Peer(), Time: now.UTC()}
	sig, err := s.Sign(Message(o))
	if err != nil {
		return Order{}, fmt.Errorf("purge: sign order: %w", err)
	}
	o.Sig = sig
	return o, nil
}

// check verifies o: well formed, signed by its issuer, not from further
// in the future than skew, and from an issuer trusted to purge o.Peer
// (self, o.Peer itself, or one of authorities).
func check(o Order, v Verifier, self string, authorities map[string]bool, now time.Time, skew time.Duration) error {
	if o.Access != nil {
		return checkAccess(o, v, self, authorities, now, skew)
	}
	if _, err := peer.Decode(o.Peer); err != nil {
		return fmt.Errorf("%w: peer %q: %v", ErrInvalid, o.Peer, err)
	}
	if o.Time.After(now.Add(skew)) {
		return fmt.Errorf("%w: issued in the future (%s)", ErrInvalid, o.Time)
	}
	if err := v.Verify(o.Issuer, Message(o), o.Sig); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if o.Issuer != o.Peer && o.Issuer != self && !authorities[o.Issuer] {
		return fmt.Errorf("%w: %s may not purge %s", ErrUnauthorized, o.Issuer, o.Peer)
	}
	return nil
}
