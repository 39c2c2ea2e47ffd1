package p2p

import (
	"context"
	"errors"
	"fmt"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/ring"
)

// DHTPrefix is the private protocol prefix of herod's Kademlia DHT, so
// herod nodes form their own DHT and never join the public IPFS one.
const DHTPrefix = protocol.ID("/herod")

// DHT is a kad-dht in server mode on DHTPrefix, used for bootstrap (from
// any one herod node, learn many) and to find a ring peer whose address
// changed (ring.Resolver). It stores no values and no provider records.
type DHT struct {
	d *dht.IpfsDHT
	h host.Host
}

var _ ring.Resolver = (*DHT)(nil)

// NewDHT starts the DHT on h and connects to the bootstrap contacts; it
// fails only if none of a non-empty bootstrap list answers.
func NewDHT(ctx context.Context, h host.Host, bootstrap []ring.Contact) (*DHT, error) {
	infos := make([]peer.AddrInfo, 0, len(bootstrap))
	for _, c := range bootstrap {
		pid, a, err := target(c)
		if err != nil {
			return nil, fmt.Errorf("p2p dht: %w", err)
		}
		infos = append(infos, peer.AddrInfo{ID: pid, Addrs: []ma.Multiaddr{a}})
	}
	d, err := dht.New(h, dht.Mode(dht.ModeServer), dht.ProtocolPrefix(DHTPrefix),
		dht.DisableValues(), dht.DisableProviders(), dht.BootstrapPeers(infos...))
	if err != nil {
		return nil, fmt.Errorf("p2p dht: %w", err)
	}
	var errs []error
	for _, ai := range infos {
		if err := h.Connect(ctx, ai); err != nil {
			errs = append(errs, err)
		}
	}
	if len(infos) > 0 && len(errs) == len(infos) {
		d.Close()
		return nil, fmt.Errorf("p2p dht bootstrap: %w", errors.Join(errs...))
	}
	if err := d.Bootstrap(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("p2p dht bootstrap: %w", err)
	}
	return &DHT{d: d, h: h}, nil
}

// Refresh refreshes the routing table now and waits for it.
func (d *DHT) Refresh(ctx context.Context) error {
	select {
	case err := <-d.d.RefreshRoutingTable():
		if err != nil {
			return fmt.Errorf("p2p dht refresh: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Resolve finds peer p through the DHT and returns its ring contact (its
// first IPv4 TCP address).
func (d *DHT) Resolve(ctx context.Context, p string) (ring.Contact, error) {
	pid, err := peer.Decode(p)
	if err != nil {
		return ring.Contact{}, fmt.Errorf("p2p resolve %q: %w", p, err)
	}
	ai, err := d.d.FindPeer(ctx, pid)
	if err != nil {
		return ring.Contact{}, fmt.Errorf("p2p resolve %s: %w: %w", p, ring.ErrUnreachable, err)
	}
	for _, a := range ai.Addrs {
		if ap, ok := tcp4(a); ok && !ap.Addr().IsUnspecified() {
			return ring.Contact{Peer: p, Addr: ap.String()}, nil
		}
	}
	return ring.Contact{}, fmt.Errorf("p2p resolve %s: %w", p, ErrNoAddr)
}

// Peers returns the contacts of the DHT's routing table: herod nodes to
// join through when the bootstrap node is gone.
func (d *DHT) Peers() []ring.Contact {
	var out []ring.Contact
	for _, pid := range d.d.RoutingTable().ListPeers() {
		for _, a := range d.h.Peerstore().Addrs(pid) {
			if ap, ok := tcp4(a); ok && !ap.Addr().IsUnspecified() {
				out = append(out, ring.Contact{Peer: pid.String(), Addr: ap.String()})
				break
			}
		}
	}
	return out
}

// Close stops the DHT (not the host).
func (d *DHT) Close() error { return d.d.Close() }
