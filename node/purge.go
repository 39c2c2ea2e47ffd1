package node

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
)

// Ring-wide purge. A purge order names a peer whose captures every node
// removes and refuses from then on (archive.Store.PurgePeer). It is signed
// by the node that issued it, with its libp2p identity key, and a node
// carries out only an order whose issuer it trusts for that:
//
//   - a purge authority: a peer id the node's operator listed in
//     Config.PurgeAuthorities (herod run --purge-authority), typically the
//     node the ring's operator runs `herod purge` on;
//   - the purged peer itself (a retraction of everything it signed);
//   - this node (its own operator's order, through the admin API).
//
// So a member, hostile or not, can erase only its own captures; an order
// from anyone else is refused (PurgeStats.Refused) and not passed on.
// Orders travel with replication: at the start of each round a node
// exchanges its orders with every replica it is about to sync with
// (/herod/purge/1.0.0, members only), before any file moves, and a node
// that takes a new order passes it on at once to the peers in its routing
// state. A node that was down catches up in its first round; replication
// never brings a purged version back, because Import refuses the purged
// peer's records from the moment its order is carried out.

// PurgeOrder is a signed order to purge every capture Peer signed.
type PurgeOrder struct {
	Peer   string    `json:"peer"`   // whose captures go
	Issuer string    `json:"issuer"` // who signed the order
	Time   time.Time `json:"time"`   // when it was issued
	Sig    []byte    `json:"sig"`    // Issuer's signature of purgeMessage
}

// purgeRecord is one line of the orders file: an order when it is taken,
// and again with Done once the store has carried it out.
type purgeRecord struct {
	PurgeOrder
	Done bool `json:"done,omitempty"`
}

// Bounds of the purge protocol and of the orders a node keeps.
const (
	// maxPurgeOrders bounds the orders a node keeps and sends: enough for
	// every peer of a large ring to be purged, a few hundred KiB.
	maxPurgeOrders = 1024
	// maxPurgeFrame bounds one request or reply of the purge protocol.
	maxPurgeFrame = 512 << 10
	// purgeOrdersFile holds the orders a node has carried out, one JSON
	// object a line, in its data directory.
	purgeOrdersFile = "purge-orders"
)

// Errors of purge orders.
var (
	// errPurgeUnauthorized refuses an order whose issuer this node does
	// not trust to purge that peer.
	errPurgeUnauthorized = errors.New("node: purge order from an issuer this node does not trust")
	// errPurgeInvalid refuses a malformed or badly signed order.
	errPurgeInvalid = errors.New("node: invalid purge order")
)

// purgeMessage is what an order's signature covers.
func purgeMessage(o PurgeOrder) []byte {
	return []byte("herod-purge-v1\n" + o.Peer + "\n" + o.Issuer + "\n" + o.Time.UTC().Format(time.RFC3339Nano))
}

// PurgeStats counts a node's purge orders.
type PurgeStats struct {
	Orders   int   `json:"orders"`   // orders carried out and kept
	Versions int64 `json:"versions"` // versions removed by them since New
	Refused  int64 `json:"refused"`  // orders refused (unauthorized or invalid)
}

// purger keeps a node's purge orders.
type purger struct {
	n           *Node
	authorities map[string]bool

	// importMu: replication imports hold it shared, a purge exclusively,
	// so that no import that passed its check before the peer was refused
	// lands after the purge's scan (archive.Store.PurgePeer).
	importMu sync.RWMutex

	spread chan struct{} // a token: push the orders to the neighbours (spreadLoop)

	mu       sync.Mutex
	orders   map[string]PurgeOrder // by purged peer
	bad      map[string]error      // refused orders (message and signature), so a replica's are not checked each round
	versions int64
	refused  int64
}

// maxBadOrders bounds the refused orders remembered; a full set is
// cleared.
const maxBadOrders = 4096

// setupPurge loads the orders this node carried out and finishes any
// whose purge was cut short. Called from New, after the store opens.
func (n *Node) setupPurge() error {
	p := &purger{n: n, authorities: map[string]bool{}, orders: map[string]PurgeOrder{},
		bad: map[string]error{}, spread: make(chan struct{}, 1)}
	for _, a := range n.cfg.PurgeAuthorities {
		p.authorities[a] = true
	}
	n.purge = p
	orders, err := loadPurgeOrders(filepath.Join(n.cfg.DataDir, purgeOrdersFile))
	if err != nil {
		return fmt.Errorf("node: purge orders: %w", err)
	}
	for _, r := range orders {
		p.orders[r.Peer] = r.PurgeOrder
		if !r.Done { // cut short: finish it
			if err := p.carryOut(context.Background(), r.PurgeOrder); err != nil {
				return fmt.Errorf("node: purge orders: %w", err)
			}
		}
	}
	n.host.SetStreamHandler(purgeProtocol, n.handlePurge)
	return nil
}

// Purge orders, as this node's operator, the purge of every capture peer
// signed: this node carries it out at once and passes it on; nodes that
// list this node as a purge authority carry it out too (the others refuse
// it). It returns how many versions this node removed.
func (n *Node) Purge(ctx context.Context, peerID string) (int, error) {
	if _, err := peer.Decode(peerID); err != nil {
		return 0, fmt.Errorf("node purge: %q is not a peer id: %w", peerID, err)
	}
	if peerID == n.self.Peer {
		return 0, errors.New("node purge: a node cannot purge its own captures from its running archive")
	}
	o := PurgeOrder{Peer: peerID, Issuer: n.self.Peer, Time: time.Now().UTC()}
	sig, err := n.identity.Sign(purgeMessage(o))
	if err != nil {
		return 0, fmt.Errorf("node purge: %w", err)
	}
	o.Sig = sig
	removed, _, err := n.purge.take(ctx, o)
	if err != nil {
		return removed, fmt.Errorf("node purge: %w", err)
	}
	return removed, nil
}

// PurgeStats returns the node's purge counters.
func (n *Node) PurgeStats() PurgeStats {
	p := n.purge
	p.mu.Lock()
	defer p.mu.Unlock()
	return PurgeStats{Orders: len(p.orders), Versions: p.versions, Refused: p.refused}
}

// check verifies o: well formed, signed by its issuer, not from the
// future, and from an issuer this node trusts to purge o.Peer.
func (p *purger) check(o PurgeOrder) error {
	if _, err := peer.Decode(o.Peer); err != nil {
		return fmt.Errorf("%w: peer %q: %v", errPurgeInvalid, o.Peer, err)
	}
	if o.Time.After(time.Now().Add(archive.MaxClockSkew)) {
		return fmt.Errorf("%w: issued in the future (%s)", errPurgeInvalid, o.Time)
	}
	if err := (peerVerifier{}).Verify(o.Issuer, purgeMessage(o), o.Sig); err != nil {
		return fmt.Errorf("%w: %w", errPurgeInvalid, err)
	}
	if o.Issuer != o.Peer && o.Issuer != p.n.self.Peer && !p.authorities[o.Issuer] {
		return fmt.Errorf("%w: %s may not purge %s", errPurgeUnauthorized, o.Issuer, o.Peer)
	}
	return nil
}

// take checks o and, if it is new, carries it out, keeps it and passes
// it on. It returns the versions removed and whether o was new.
func (p *purger) take(ctx context.Context, o PurgeOrder) (int, bool, error) {
	// Keyed by the whole order, not its signature alone: an order altered
	// by someone else must not get the authentic one refused.
	sig := string(purgeMessage(o)) + "\n" + string(o.Sig)
	p.mu.Lock()
	err, known := p.bad[sig]
	p.mu.Unlock()
	if known {
		return 0, false, err
	}
	if err := p.check(o); err != nil {
		p.mu.Lock()
		p.refused++
		if len(p.bad) >= maxBadOrders {
			p.bad = map[string]error{}
		}
		p.bad[sig] = err
		p.mu.Unlock()
		p.n.log.Warn("refused a purge order", "peer", o.Peer, "issuer", o.Issuer, "err", err)
		return 0, false, err
	}
	p.mu.Lock()
	_, have := p.orders[o.Peer]
	full := len(p.orders) >= maxPurgeOrders
	p.mu.Unlock()
	if have {
		return 0, false, nil
	}
	if full {
		return 0, false, fmt.Errorf("node: %d purge orders kept already", maxPurgeOrders)
	}
	// Kept first: a crash during the purge finishes it at the next start.
	if err := appendPurgeRecord(filepath.Join(p.n.cfg.DataDir, purgeOrdersFile), purgeRecord{PurgeOrder: o}); err != nil {
		return 0, false, fmt.Errorf("node: keep purge order: %w", err)
	}
	p.importMu.Lock()
	removed, err := p.n.store.PurgePeer(ctx, o.Peer)
	p.importMu.Unlock()
	pid, _ := peer.Decode(o.Peer)
	p.n.memberOK.forget(pid)
	if err == nil {
		err = appendPurgeRecord(filepath.Join(p.n.cfg.DataDir, purgeOrdersFile), purgeRecord{PurgeOrder: o, Done: true})
	}
	if err != nil {
		// Not kept in memory: the next exchange offers it again, and the
		// purge (idempotent) runs again; a restart finishes it too.
		return removed, true, fmt.Errorf("node: purge %s: %w", o.Peer, err)
	}
	p.mu.Lock()
	p.orders[o.Peer] = o
	p.versions += int64(removed)
	p.mu.Unlock()
	p.n.log.Info("carried out a purge order", "peer", o.Peer, "issuer", o.Issuer, "versions", removed)
	p.n.spreadPurge()
	return removed, true, nil
}

// carryOut runs the store's purge of an order kept but not done (a crash
// cut it short) and records it done.
func (p *purger) carryOut(ctx context.Context, o PurgeOrder) error {
	n, err := p.n.store.PurgePeer(ctx, o.Peer)
	if err != nil {
		return err
	}
	p.n.log.Info("finished a purge cut short", "peer", o.Peer, "versions", n)
	return appendPurgeRecord(filepath.Join(p.n.cfg.DataDir, purgeOrdersFile), purgeRecord{PurgeOrder: o, Done: true})
}

// list returns the orders kept, sorted by purged peer, and their digest.
func (p *purger) list() ([]PurgeOrder, string) {
	p.mu.Lock()
	out := make([]PurgeOrder, 0, len(p.orders))
	for _, o := range p.orders {
		out = append(out, o)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b PurgeOrder) int {
		return bytes.Compare([]byte(a.Peer), []byte(b.Peer))
	})
	h := sha1.New()
	for _, o := range out {
		h.Write(purgeMessage(o))
		h.Write(o.Sig)
	}
	return out, hex.EncodeToString(h.Sum(nil))
}

// loadPurgeOrders reads the orders file, one record per peer (the last
// one written), and cuts off a last line a crash left incomplete; a
// missing file holds none.
func loadPurgeOrders(path string) ([]purgeRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	last := map[string]int{} // peer -> index in out
	var out []purgeRecord
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var r purgeRecord
		if err := json.Unmarshal(l, &r); err != nil {
			if i == len(lines)-1 {
				// A line a crash cut short (its order was never carried
				// out): cut it off, so the next record starts a line.
				if err := os.Truncate(path, int64(len(b)-len(l))); err != nil {
					return nil, err
				}
				break
			}
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		if j, ok := last[r.Peer]; ok {
			out[j] = r
			continue
		}
		last[r.Peer] = len(out)
		out = append(out, r)
	}
	return out, nil
}

// appendPurgeRecord appends r to the orders file, synced.
func appendPurgeRecord(path string, r purgeRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
