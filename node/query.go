package node

import (
	"context"
	"io"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/query"
)

// queryProtocol serves ring-wide queries (package query).
const queryProtocol = query.Protocol

// querySlots holds a slot per query request being served, in this
// process (query.Service.Slots): process-wide rather than per node
// because the limit protects the machine's disk and CPU.
var querySlots = make(chan struct{}, query.MaxServing)

// setupQuery builds the node's query service and registers its handler on
// the host. The handler does not depend on Start: it needs only the store.
func (n *Node) setupQuery() {
	n.query = &query.Service{
		Store: n.store,
		Self:  n.self,
		Ring:  n.ring,
		Open:  n.openStream,
		Hooks: wire.Hooks{Logger: n.log},
		Slots: querySlots,
		// k: another member's row is believed only from its URL's holders.
		Replicas: n.cfg.Replicas,
		// Set up after the query service: looked up when a listing needs it.
		Dated: func(ctx context.Context, vs []archive.Version) []archive.Dating { return n.witness.DateAll(ctx, vs) },
	}
	n.query.Access = n.access.table.Decide // access.go
	n.kit.MustHandle(n.query.Spec())
}

// List implements gateway.Lister ring-wide (query.Service.List).
func (r *resolver) List(ctx context.Context, q cdx.Query) ([]archive.Version, error) {
	return r.query.List(ctx, q)
}

// Page implements gateway.Pager ring-wide (query.Service.Page).
func (r *resolver) Page(ctx context.Context, req cdx.PageRequest) ([]cdx.Row, bool, error) {
	return r.query.Page(ctx, req)
}

// Export implements gateway.Exporter ring-wide (query.Service.Export).
func (r *resolver) Export(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string) error {
	return r.query.Export(ctx, q, w, resumeAfter)
}

// ExportProgress implements gateway.ProgressExporter ring-wide
// (query.Service.ExportProgress).
func (r *resolver) ExportProgress(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string, progress func(cursor string)) error {
	return r.query.ExportProgress(ctx, q, w, resumeAfter, progress)
}

var (
	_ gateway.Lister           = (*resolver)(nil)
	_ gateway.Pager            = (*resolver)(nil)
	_ gateway.ProgressExporter = (*resolver)(nil)
)
