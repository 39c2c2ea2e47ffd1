package ring

import (
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/herod-archive/herod/internal/id"
)

// Contact is a real node: its libp2p peer id string and its TCP "ip:port"
// listen address. Two contacts are the same node only if both fields match.
type Contact struct {
	Peer string `json:"peer"`
	Addr string `json:"addr"`
	// Relay, when set, is the libp2p multiaddr (ending in /p2p/ID) of the
	// circuit relay through which the node is reached: a volunteer behind
	// a router that maps no port. Addr then carries the node's public IP as
	// members observe its outbound connections (the port is nominal), and
	// its virtual-server ids derive from that IP as for any node; the
	// Transport verifies a relayed contact by that observation instead of
	// by dialing Addr (docs/ring.md, "Home volunteers").
	Relay string `json:"relay,omitempty"`
}

// String returns "peer@addr" for logs.
func (c Contact) String() string {
	if c.Relay != "" {
		return c.Peer + "@" + c.Addr + "~relay"
	}
	return c.Peer + "@" + c.Addr
}

// Node is one virtual server: its ring id, the real node that runs it and
// its index on that real node. A valid Node satisfies
// ID == VirtualID(Addr, Index); see CheckID.
type Node struct {
	ID id.ID `json:"id"`
	Contact
	Index int `json:"vs"`
}

// String returns a short form for logs.
func (n Node) String() string { return fmt.Sprintf("%s/%s#%d", n.ID.Short(), n.Addr, n.Index) }

// VirtualID returns the ring id of virtual server index on the real node
// reached at addr. The layout is fixed and part of the protocol:
//
//	SHA-1( IP of addr as ASCII bytes ‖ uint32 big-endian index )
//
// where the IP is the canonical text of addr's address (netip.Addr.String
// form, e.g. "198.51.100.7" or "2001:db8::1"). The port is not part of the
// id: every node reached at one public IP — the volunteers of one
// household behind one router, or an attacker's one address — shares that
// IP's MaxVirtualServers positions, so no address can claim more, and no
// choice of port moves a node on the ring. An addr that does not parse is
// hashed as it is (CheckID refuses it anyway).
func VirtualID(addr string, index int) id.ID {
	host := addr
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		host = ap.Addr().String()
	}
	h := sha1.New()
	h.Write([]byte(host))
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(index))
	h.Write(b[:])
	var x id.ID
	h.Sum(x[:0])
	return x
}

// Errors returned when a claimed virtual server fails verification.
var (
	ErrBadAddr  = errors.New("ring: address is not a canonical ip:port")
	ErrBadIndex = errors.New("ring: virtual server index out of range")
	ErrBadID    = errors.New("ring: id does not match address and index")
	ErrBadPeer  = errors.New("ring: address does not answer as the claimed peer")
	// ErrIPFull reports that every virtual-server position of a public IP
	// is taken by other nodes behind it.
	ErrIPFull = errors.New("ring: no free virtual-server position at this IP")
)

// CheckAddr reports whether addr is a canonical "ip:port" with a non-zero port.
func CheckAddr(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Port() == 0 || ap.String() != addr {
		return fmt.Errorf("%w: %q", ErrBadAddr, addr)
	}
	return nil
}

// CheckID verifies the arithmetic part of a virtual server claim: the
// address is canonical, 0 <= Index < maxVS and ID == VirtualID(Addr, Index).
// It does not check that the address belongs to the peer; the Transport's
// Verify does that.
func CheckID(n Node, maxVS int) error {
	if err := CheckAddr(n.Addr); err != nil {
		return err
	}
	if n.Peer == "" {
		return fmt.Errorf("%w: empty peer id", ErrBadPeer)
	}
	if n.Index < 0 || n.Index >= maxVS {
		return fmt.Errorf("%w: %d not in [0,%d)", ErrBadIndex, n.Index, maxVS)
	}
	if VirtualID(n.Addr, n.Index) != n.ID {
		return fmt.Errorf("%w: %s", ErrBadID, n)
	}
	return nil
}

// dist returns the clockwise distance (b - a) mod 2^160 as an ID, so that
// distances compare with Cmp.
func dist(a, b id.ID) id.ID {
	var d id.ID
	borrow := 0
	for i := id.Size - 1; i >= 0; i-- {
		x := int(b[i]) - int(a[i]) - borrow
		if x < 0 {
			x += 256
			borrow = 1
		} else {
			borrow = 0
		}
		d[i] = byte(x)
	}
	return d
}

// sortFrom orders nodes clockwise from origin (nearest successor first),
// drops duplicates by ID and drops origin itself.
func sortFrom(origin id.ID, nodes []Node) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		if n.ID != origin {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b Node) int { return dist(origin, a.ID).Cmp(dist(origin, b.ID)) })
	return slices.CompactFunc(out, func(a, b Node) bool { return a.ID == b.ID })
}

// sortToward orders nodes by how closely they precede key (closest
// first), dropping nodes whose id equals key and duplicates.
func sortToward(key id.ID, nodes []Node) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		if n.ID != key {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b Node) int { return dist(a.ID, key).Cmp(dist(b.ID, key)) })
	return slices.CompactFunc(out, func(a, b Node) bool { return a.ID == b.ID })
}

// sameIDs reports whether two node lists hold the same ids in order.
func sameIDs(a, b []Node) bool {
	return slices.EqualFunc(a, b, func(x, y Node) bool { return x.ID == y.ID && x.Contact == y.Contact })
}

// topToward returns up to k distinct nodes of in that most closely precede
// key (closest first), skipping nodes whose id equals key and nodes for
// which skip returns true. It runs in O(len(in)·k), cheaper than sorting
// for the short lists of a lookup step.
func topToward(key id.ID, in []Node, k int, skip func(Node) bool) []Node {
	return topBy(in, k, skip, func(n Node) (id.ID, bool) { return dist(n.ID, key), n.ID != key })
}

// topBy keeps the k distinct nodes with the smallest distance d(n) among
// those for which d reports ok and skip does not.
func topBy(in []Node, k int, skip func(Node) bool, d func(Node) (id.ID, bool)) []Node {
	type cand struct {
		d id.ID
		n Node
	}
	top := make([]cand, 0, k+1)
	for _, n := range in {
		if skip != nil && skip(n) {
			continue
		}
		d, ok := d(n)
		if !ok {
			continue
		}
		i := len(top)
		for i > 0 && d.Cmp(top[i-1].d) < 0 {
			i--
		}
		if i > 0 && top[i-1].n.ID == n.ID || i < len(top) && top[i].n.ID == n.ID || i >= k {
			continue
		}
		top = append(top, cand{})
		copy(top[i+1:], top[i:])
		top[i] = cand{d, n}
		if len(top) > k {
			top = top[:k]
		}
	}
	out := make([]Node, len(top))
	for i, c := range top {
		out[i] = c.n
	}
	return out
}
