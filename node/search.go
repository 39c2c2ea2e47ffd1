package node

import (
	"context"
	"fmt"
	"path/filepath"

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
	n.kit.MustHandle(n.search.Spec())
	return nil
}

// versionAdded is the archive's OnAdd: replication pushes the version
// to its replicas and search indexes it.
func (n *Node) versionAdded(v archive.Version) {
	n.repl.Notify(v)
	if n.search != nil {
		n.search.Notify(v)
	}
}

// startSearch backfills the URLs this node owns into the ring's index
// and then indexes each version the node stores (node/search Run).
func (n *Node) startSearch() {
	ix := &search.Indexer{Archive: n.store, Sink: n.search, Docs: n.searchStore}
	n.goRun(func(ctx context.Context) { n.search.Run(ctx, ix, n.store, n.ring.Owns) })
}

// SearchStats returns the node's index health (node/search Stats).
func (n *Node) SearchStats() nodesearch.Stats {
	if n.search == nil {
		return nodesearch.Stats{}
	}
	return n.search.Stats()
}
