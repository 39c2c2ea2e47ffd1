package node

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/canon"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/witness"
	"github.com/herod-archive/herod/ring"
)

// witnessRequest bounds a witness request: MaxAsk versions named by URL,
// time and digest (witness's own limit, which it checks again).
const witnessRequest = 64 << 10

// setupWitness builds the node's witness service (package witness) and
// registers its protocol's handler: the statements of this node's store,
// asked by other holders and readers' nodes.
func (n *Node) setupWitness() {
	n.witness = &witness.Service{
		Store:   n.store,
		Self:    n.self,
		Holders: n.holdersOf,
		Open:    n.openStream,
		Hooks:   wire.Hooks{BadFrame: n.badFrame, Logger: n.log.With("sub", "witness")},
	}
	n.kit.MustHandle(rawSpec(witness.Protocol, n.witness.Handle, witnessRequest, streamTimeout, 32))
}

// startWitness starts the passes that fetch other holders' statements of
// the versions this node received too late to witness them itself.
func (n *Node) startWitness() {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.witness.Run(n.ctx)
	}()
}

// holdersOf returns the real nodes that hold key: its owner and the
// owner's successors, k in all.
func (n *Node) holdersOf(ctx context.Context, key id.ID) ([]ring.Contact, error) {
	nodes, err := n.ring.Successors(ctx, key, n.cfg.Replicas)
	if err != nil {
		return nil, err
	}
	cs := make([]ring.Contact, len(nodes))
	for i, v := range nodes {
		cs[i] = v.Contact
	}
	return cs, nil
}

// readerArchive is the archive the gateway shows readers: the resolver
// (every URL from its holders, ring-wide listings and exports), whose
// Versions and Get leave out the versions whose date no independent
// holder vouches for (witness.Archive).
type readerArchive struct {
	*resolver
	dated *witness.Archive
}

var _ gateway.Archive = readerArchive{}

func (n *Node) readerArchive() readerArchive {
	return readerArchive{resolver: (*resolver)(n), dated: &witness.Archive{Inner: (*resolver)(n), Witness: n.witness}}
}

// Versions implements gateway.Archive: the dated versions of url.
func (a readerArchive) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	return a.dated.Versions(ctx, url)
}

// Get implements gateway.Archive: the dated version of url for t.
func (a readerArchive) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	return a.dated.Get(ctx, url, t)
}

// WitnessStats reports the witness service's counters.
func (n *Node) WitnessStats() witness.Stats { return n.witness.Stats() }

// provenance is the gateway's Config.Provenance: how this node dates v
// and the statements that vouch for it.
func (n *Node) provenance(ctx context.Context, v archive.Version) gateway.Provenance {
	d, ws := n.witness.Vouch(ctx, v)
	return gateway.Provenance{Dating: d.String(), Witnesses: ws}
}

// StreamAt implements gateway.Streamer: the payload of the version of
// url Get would serve for t (the newest shown not after t, or the oldest),
// read from this node's segment files (archive.Store.OpenBody) when this
// node holds it. When it holds no version of url it says so without
// asking the other holders.
func (a readerArchive) StreamAt(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Body, error) {
	c, err := canon.Canonical(url)
	if err != nil {
		return archive.Version{}, nil, err
	}
	local, err := a.resolver.store.Versions(ctx, c)
	if err != nil {
		return archive.Version{}, nil, err
	}
	if len(local) == 0 {
		return archive.Version{}, nil, fmt.Errorf("node stream %s: %w: held by other nodes", c, archive.ErrNotStreamable)
	}
	vs, err := a.Versions(ctx, c) // merged and dated, as Get chooses
	if err != nil {
		return archive.Version{}, nil, err
	}
	i := slices.IndexFunc(vs, func(v archive.Version) bool { return v.Time.After(t) }) - 1
	switch {
	case len(vs) == 0:
		return archive.Version{}, nil, fmt.Errorf("node stream %s: %w", c, archive.ErrNotFound)
	case i == -2: // none after t: the newest
		i = len(vs) - 1
	case i == -1: // all after t: the oldest
		i = 0
	}
	v := vs[i]
	if v.File == "" {
		return v, nil, fmt.Errorf("node stream %s: %w: held by other nodes", c, archive.ErrNotStreamable)
	}
	b, err := a.resolver.store.OpenBody(ctx, v)
	return v, b, err
}

var _ gateway.Streamer = readerArchive{}
