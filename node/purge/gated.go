package purge

import (
	"context"
	"errors"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// Gated returns local, the store replication imports into, with each
// Import waiting while a purge runs (Importing), so that a record that
// passed its check before its fetcher was refused cannot land after the
// purge's scan. A local that is a replicate.CondImporter gives a store
// that is one too, its ImportIf gated alike.
func (b *Book) Gated(local replicate.Local) replicate.Local {
	if c, ok := local.(replicate.CondImporter); ok {
		return gatedCond{gated{local, b}, c}
	}
	return gated{local, b}
}

// gated is Gated's store.
type gated struct {
	replicate.Local
	b *Book
}

// Import implements replicate.Local.
func (g gated) Import(ctx context.Context, name string, data []byte) (v archive.Version, added bool, err error) {
	g.b.Importing(func() { v, added, err = g.Local.Import(ctx, name, data) })
	return v, added, err
}

// gatedCond is Gated's store for a local that is a CondImporter.
type gatedCond struct {
	gated
	c replicate.CondImporter
}

// ImportIf implements replicate.CondImporter.
func (g gatedCond) ImportIf(ctx context.Context, name string, data []byte, take func(archive.Version) bool) (v archive.Version, added bool, err error) {
	g.b.Importing(func() { v, added, err = g.c.ImportIf(ctx, name, data, take) })
	return v, added, err
}

// Holds implements replicate.Holder when the gated store does, so that
// an offer's or a hand-off's copy reads from the peer only what the store
// lacks; otherwise it answers false (the record is read and Import
// decides).
func (g gated) Holds(ctx context.Context, e archive.Entry) (bool, error) {
	if h, ok := g.Local.(replicate.Holder); ok {
		return h.Holds(ctx, e)
	}
	return false, nil
}

var _ replicate.Holder = gated{}

// Issue orders, as this node's operator, the purge of every capture
// peerID signed, signed by s (this node's identity, Config.Self): the
// Book carries it out at once (Take, which calls Config.Taken to pass it
// on) and returns how many versions it removed. A node cannot purge its
// own captures from its running archive.
func (b *Book) Issue(ctx context.Context, s Signer, peerID string) (int, error) {
	if peerID == b.cfg.Self {
		return 0, errors.New("a node cannot purge its own captures from its running archive")
	}
	o, err := NewOrder(s, peerID, b.cfg.Now())
	if err != nil {
		return 0, err // "purge: ..." already
	}
	removed, _, err := b.Take(ctx, o) // its errors name the purge
	return removed, err
}

// Neighbours returns the peers in the routing state st shows, for an
// Exchanger's Neighbours: per local virtual server its predecessor,
// successors and fingers, in that order, repeats included.
func Neighbours(st ring.Status) []ring.Contact {
	var cs []ring.Contact
	for _, v := range st.Vnodes {
		if v.Predecessor != nil {
			cs = append(cs, v.Predecessor.Contact)
		}
		for _, s := range v.Successors {
			cs = append(cs, s.Contact)
		}
		for _, f := range v.Fingers {
			cs = append(cs, f.Node.Contact)
		}
	}
	return cs
}
