package node

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
	nodesearch "github.com/herod-archive/herod/node/search"
	"github.com/herod-archive/herod/search"
)

// setupSearch opens the node's posting store (DataDir/search) and builds
// its search service on the ring: the terms it holds, the postings its
// indexer sends, the posting queries of any gateway (node/search).
// Called from buildCrawl once the ring exists, before the crawler stores
// anything.
func (n *Node) setupSearch() error {
	st, err := search.OpenStore(filepath.Join(n.cfg.DataDir, "search"))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.searchStore = st
	n.search = &nodesearch.Service{Store: st, Self: n.self, Ring: n.ring, K: n.cfg.Replicas,
		Open: n.openStream, Logger: n.log.With("sub", "search")}
	if q := n.cfg.Quota; q > 0 {
		// Other members' postings take at most half the disk quota's
		// bytes, at about 64 bytes a posting on disk.
		n.search.MaxPostings = max(q/2/64, 1)
	}
	n.kit.MustHandle(n.search.Spec())
	// Posting sync between a term range's holders (node/search
	// syncround.go): never bringing back a purged capture's postings.
	n.search.PurgeFilter = func() func(string, int64) bool {
		if ps := n.store.URLPurges(); len(ps) > 0 {
			return func(u string, from int64) bool {
				t := time.UnixMilli(from)
				return slices.ContainsFunc(ps, func(p archive.URLPurge) bool { return p.Covers(u, t) })
			}
		}
		return nil
	}
	n.kit.MustHandle(n.search.SyncSpec())
	return nil
}

// versionAdded is the archive's OnAdd: replication pushes the version
// to its replicas and search indexes it.
func (n *Node) versionAdded(v archive.Version) {
	n.repl.Notify(v)
	n.linkVersionAdded(v) // linksweep.go: the next link sweep reads it
	if n.search != nil {
		n.search.Notify(v)
	}
}

// startSearch backfills the URLs this node owns into the ring's index
// and then indexes each version the node stores (node/search Run), once
// the postings of the captures purged before the index opened are gone.
func (n *Node) startSearch() {
	ix := &search.Indexer{Archive: n.store, Sink: n.search, Docs: n.searchStore}
	n.goRun(func(ctx context.Context) {
		if err := n.purgePostings(ctx, n.store.URLPurges()); err != nil {
			n.log.Warn("search: purge postings", "err", err)
		}
		n.search.Run(ctx, ix, n.store, n.ring.Owns)
	})
	// Sync rounds: periodic, and SyncSettle after a change of a local
	// virtual server's range or successors.
	sub := n.ring.Subscribe(64)
	n.goRun(func(ctx context.Context) {
		defer sub.Unsubscribe()
		n.search.RunSync(ctx, sub.C)
	})
}

// purgePostings deletes the postings and document rows of the captures
// the URL purges cover, from the terms this node holds (a purge order
// reaches every node, each deletes what it holds). Without it no purged
// capture could be a result still: the gateway verifies each from its
// capture, which the purge removed; this frees the space.
func (n *Node) purgePostings(ctx context.Context, ps []archive.URLPurge) error {
	if n.searchStore == nil || len(ps) == 0 {
		return nil
	}
	_, err := n.searchStore.DeleteWhere(ctx, func(u string, from int64) bool {
		t := time.UnixMilli(from)
		for _, p := range ps {
			if p.Covers(u, t) {
				return true
			}
		}
		return false
	})
	return err
}

// SearchStats returns the node's index health (node/search Stats).
func (n *Node) SearchStats() nodesearch.Stats {
	if n.search == nil {
		return nodesearch.Stats{}
	}
	return n.search.Stats()
}
