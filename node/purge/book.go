package purge

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive/access"
)

// Bounds of the orders a Book keeps.
const (
	// MaxOrders bounds the orders a node keeps and sends: enough for
	// every peer of a large ring to be purged, a few hundred KiB.
	MaxOrders = 1024
	// maxBad bounds the refused orders remembered; a full set is cleared.
	maxBad = 4096
	// MaxSelfPurges bounds the retractions kept (orders by which a peer
	// purges itself, not this node's own): any key signs one for itself,
	// so fresh keys must not fill MaxOrders and get every later order of
	// an authority or operator refused, ring-wide.
	MaxSelfPurges = 128
)

// Store is the archive a Book purges: archive.Store's method.
type Store interface {
	// PurgePeer removes every version peer signed and refuses its records
	// from then on; it returns how many versions it removed.
	PurgePeer(ctx context.Context, peer string) (int, error)
}

// Config is what a Book needs. Path, Self, Store and Verifier are
// required.
type Config struct {
	Path        string   // the orders file, one JSON record a line
	Self        string   // this node's peer id: its own orders are trusted
	Authorities []string // peer ids trusted to purge any peer
	Store       Store
	Verifier    Verifier
	// Skew is how far in the future an order's time may lie.
	Skew time.Duration
	// Taken, if set, is called after a new order was carried out (the
	// node forgets the peer's membership and passes the order on); peer
	// is "" for an access order.
	Taken func(peer string)
	// Ruled, if set, is called with the ring-wide access rules in force
	// after an access order changed them (access.go).
	Ruled func(rules []access.Rule)
	// Now tells the time; nil means time.Now.
	Now func() time.Time
	// Logger receives the Book's events; nil discards them.
	Logger *slog.Logger
}

// Stats counts a node's purge orders.
type Stats struct {
	Orders   int   `json:"orders"`   // orders carried out and kept
	Rules    int   `json:"rules"`    // access rules in force among them
	Versions int64 `json:"versions"` // versions removed by them since Open
	Refused  int64 `json:"refused"`  // orders refused (unauthorized or invalid)
}

// Book keeps a node's purge orders: it checks an order, records it,
// carries it out on the store and lists the orders kept.
type Book struct {
	cfg         Config
	log         *slog.Logger
	authorities map[string]bool

	// importMu: replication imports hold it shared (Importing), a purge
	// exclusively.
	importMu sync.RWMutex

	mu       sync.Mutex
	orders   map[string]Order // by key: purged peer, or access rule ID
	taking   map[string]bool  // purged peers whose order a Take is carrying out
	bad      map[string]error // refused orders (message and signature), so a replica's are not checked each round
	versions int64
	refused  int64
}

// Open loads the orders of cfg.Path and finishes any whose purge was cut
// short.
func Open(ctx context.Context, cfg Config) (*Book, error) {
	if cfg.Path == "" || cfg.Self == "" || cfg.Store == nil || cfg.Verifier == nil {
		return nil, errors.New("purge: Open needs Path, Self, Store and Verifier")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Book{cfg: cfg, log: cfg.Logger, authorities: map[string]bool{}, orders: map[string]Order{}, taking: map[string]bool{}, bad: map[string]error{}}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	for _, a := range cfg.Authorities {
		b.authorities[a] = true
	}
	recs, err := loadRecords(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("purge: orders: %w", err)
	}
	for _, r := range recs {
		b.orders[r.key()] = r.Order
		if !r.Done && r.Access == nil { // cut short: finish it
			if err := b.carryOut(ctx, r.Order); err != nil {
				return nil, fmt.Errorf("purge: orders: %w", err)
			}
		}
	}
	return b, nil
}

// Stats returns the Book's counters.
func (b *Book) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	rules := 0
	for _, o := range b.orders {
		if o.Access != nil && !o.Revoked {
			rules++
		}
	}
	return Stats{Orders: len(b.orders), Rules: rules, Versions: b.versions, Refused: b.refused}
}

// Importing runs f, a replication import, while no purge runs.
func (b *Book) Importing(f func()) {
	b.importMu.RLock()
	defer b.importMu.RUnlock()
	f()
}

// Take checks o and, if it is new, carries it out and keeps it. It
// returns the versions removed and whether o was new; of concurrent Takes
// of one peer's order only one carries it out, the others return at once
// (not new). A refused order
// is an error wrapping ErrInvalid or ErrUnauthorized.
func (b *Book) Take(ctx context.Context, o Order) (int, bool, error) {
	// Keyed by the whole order, not its signature alone: an order altered
	// by someone else must not get the authentic one refused.
	sig := string(Message(o)) + "\n" + string(o.Sig)
	b.mu.Lock()
	err, known := b.bad[sig]
	b.mu.Unlock()
	if known {
		return 0, false, err
	}
	if err := check(o, b.cfg.Verifier, b.cfg.Self, b.authorities, b.cfg.Now(), b.cfg.Skew); err != nil {
		b.mu.Lock()
		b.refused++
		if len(b.bad) >= maxBad {
			b.bad = map[string]error{}
		}
		b.bad[sig] = err
		b.mu.Unlock()
		b.log.Warn("refused a purge order", "peer", o.Peer, "issuer", o.Issuer, "access", o.Access != nil, "err", err)
		return 0, false, err
	}
	if o.Access != nil {
		return 0, b.takeAccess(o), nil
	}
	// One Take carries out a peer's order: the same order arrives from
	// several peers' exchanges at once.
	b.mu.Lock()
	_, have := b.orders[o.Peer]
	have = have || b.taking[o.Peer]
	full := len(b.orders)+len(b.taking) >= MaxOrders
	retraction := b.retraction(o)
	selfFull := retraction && b.retractionsLocked() >= MaxSelfPurges
	if !have && !full && !selfFull {
		b.taking[o.Peer] = true
	}
	b.mu.Unlock()
	if have {
		return 0, false, nil
	}
	if full {
		return 0, false, fmt.Errorf("purge: %d orders kept already", MaxOrders)
	}
	if selfFull {
		return 0, false, fmt.Errorf("purge: %d retractions kept already", MaxSelfPurges)
	}
	defer func() {
		b.mu.Lock()
		delete(b.taking, o.Peer)
		b.mu.Unlock()
	}()
	// Kept first: a crash during the purge finishes it at the next Open.
	if err := appendRecord(b.cfg.Path, record{Order: o}); err != nil {
		return 0, false, fmt.Errorf("purge: keep order: %w", err)
	}
	b.importMu.Lock()
	removed, err := b.cfg.Store.PurgePeer(ctx, o.Peer)
	b.importMu.Unlock()
	if err == nil {
		err = appendRecord(b.cfg.Path, record{Order: o, Done: true})
	}
	if err != nil {
		// Not kept in memory: the next exchange offers it again, and the
		// purge (idempotent) runs again; a restart finishes it too.
		return removed, true, fmt.Errorf("purge %s: %w", o.Peer, err)
	}
	b.mu.Lock()
	b.orders[o.Peer] = o
	b.versions += int64(removed)
	b.mu.Unlock()
	b.log.Info("carried out a purge order", "peer", o.Peer, "issuer", o.Issuer, "versions", removed)
	if b.cfg.Taken != nil {
		b.cfg.Taken(o.Peer)
	}
	return removed, true, nil
}

// retraction reports whether o is a peer's purge of itself, neither this
// node's order nor an authority's.
func (b *Book) retraction(o Order) bool {
	return o.Access == nil && o.Issuer == o.Peer && o.Issuer != b.cfg.Self && !b.authorities[o.Issuer]
}

// retractionsLocked counts the retractions kept. The caller holds b.mu.
func (b *Book) retractionsLocked() int {
	n := 0
	for _, o := range b.orders {
		if b.retraction(o) {
			n++
		}
	}
	return n
}

// carryOut runs the store's purge of an order kept but not done (a crash
// cut it short) and records it done.
func (b *Book) carryOut(ctx context.Context, o Order) error {
	n, err := b.cfg.Store.PurgePeer(ctx, o.Peer)
	if err != nil {
		return err
	}
	b.log.Info("finished a purge cut short", "peer", o.Peer, "versions", n)
	return appendRecord(b.cfg.Path, record{Order: o, Done: true})
}

// List returns the orders kept, sorted by key, and their digest
// (equal digests: the same orders).
func (b *Book) List() ([]Order, string) {
	b.mu.Lock()
	out := make([]Order, 0, len(b.orders))
	for _, o := range b.orders {
		out = append(out, o)
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(x, y Order) int {
		return bytes.Compare([]byte(x.key()), []byte(y.key()))
	})
	h := sha1.New()
	for _, o := range out {
		h.Write(Message(o))
		h.Write(o.Sig)
	}
	return out, hex.EncodeToString(h.Sum(nil))
}
