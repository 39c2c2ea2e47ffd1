package node

import (
	"context"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/query"
	"github.com/herod-archive/herod/node/resolve"
	"github.com/herod-archive/herod/node/witness"
)

// resolver is the node seen as the gateway's archive: every URL is answered
// by its holders (package resolve), and ring-wide queries by every real
// node (package query).
type resolver Node

// The gateway's interfaces that the node's services implement; their
// packages do not import the gateway.
var (
	_ gateway.Archive = (*resolver)(nil)
	_ gateway.Archive = (*resolve.Service)(nil)
	_ gateway.Checker = (*resolve.Service)(nil)
	_ gateway.Archive = (*witness.Archive)(nil)
	_ gateway.Pager   = (*query.Service)(nil)
	_ gateway.Lister  = (*query.Service)(nil)

	_ gateway.ProgressExporter = (*query.Service)(nil)
)

// setupResolve builds the node's archive service and registers the
// archive protocol's handler (registered in Start: it serves under the
// node's context).
func (n *Node) setupResolve() {
	n.resolve = &resolve.Service{
		Store:  n.store,
		Self:   n.self,
		Ring:   n.ring,
		K:      n.cfg.Replicas,
		Open:   n.openStream,
		Gate:   n.admit,
		Base:   func() context.Context { return n.ctx },
		Hooks:  wire.Hooks{BadFrame: n.badFrame, Logger: n.log},
		Budget: n.replies,
	}
	n.resolve.Access = n.access.table.Decide // access.go
}

// Versions implements gateway.Archive (resolve.Service.Versions).
func (r *resolver) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	return r.resolve.Versions(ctx, url)
}

// Checks implements gateway.Checker (resolve.Service.Checks).
func (r *resolver) Checks(ctx context.Context, url string) ([]time.Time, error) {
	return r.resolve.Checks(ctx, url)
}

// Get implements gateway.Archive (resolve.Service.Get).
func (r *resolver) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	return r.resolve.Get(ctx, url, t)
}

// ownsURL reports whether this node owns the canonical url by its view
// now: what link receipt queues (the day's plan is plansURL).
func (n *Node) ownsURL(url string) bool { return n.ring.Owns(id.OfString(url)) }

// plansURL reports whether the day's crawl of this node includes the
// canonical url (the crawler's Config.Owns): owned, counting a range whose
// predecessor is unknown for the moment as the range last known
// (ring.Ring.OwnsLastKnown), so a new day that starts while a predecessor
// dies does not leave the range unqueued.
func (n *Node) plansURL(url string) bool { return n.ring.OwnsLastKnown(id.OfString(url)) }
