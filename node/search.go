package node

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
	nodesearch "github.com/herod-archive/herod/node/search"
	"github.com/herod-archive/herod/ring"
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
	n.recent = newRecentCaptures()
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
	n.search.Owned = n.ownedRanges
	n.resumeSearch()
	n.store.OnImport(n.versionImported)
	return nil
}

// searchMarkPath is where a clean stop leaves its search mark: in the
// posting store's directory, which takes the mark with it when removed.
func (n *Node) searchMarkPath() string {
	return filepath.Join(n.cfg.DataDir, "search", nodesearch.MarkFile)
}

// resumeSearch takes the mark of the node's last clean stop, if any, and
// limits the start's backfill to what it cannot vouch for (node/search
// mark.go). Called before anything writes to the archive.
func (n *Node) resumeSearch() {
	m, err := nodesearch.TakeMark(n.searchMarkPath())
	if err != nil {
		n.log.Warn("search: the last stop's mark is unreadable; indexing every URL again", "err", err)
		return
	}
	if m == nil {
		n.log.Debug("search: no clean stop recorded; indexing every URL again")
		return
	}
	leaves, err := n.store.LeafHashes(context.Background())
	if err != nil {
		n.log.Warn("search: indexing every URL again", "err", err)
		return
	}
	changed, leavesChanged := m.Changed(leaves)
	n.search.Resume = changed
	n.log.Info("search: resuming from a clean stop", "leavesChanged", leavesChanged)
}

// writeSearchMark records, at a stop, that the index holds every version
// the archive does (node/search Mark), when it does: called once nothing
// writes to the archive any more, with the ranges the node owned before
// it left the ring.
func (n *Node) writeSearchMark(owned []archive.KeyRange) {
	// Settled here spares reading the sums of an unsettled stop; Mark
	// asks again once Adding, read after the sums, is 0: a version the
	// sums count is then one search was told of.
	if n.search == nil || n.store == nil || !n.search.Settled() {
		return
	}
	leaves, err := n.store.LeafHashes(context.Background())
	if err != nil {
		n.log.Warn("search: no stop mark; the next start indexes every URL again", "err", err)
		return
	}
	if k := n.store.Adding(); k != 0 {
		n.log.Warn("search: no stop mark: the archive is still taking versions", "adding", k)
		return
	}
	m := n.search.Mark(leaves, owned)
	if m == nil {
		return
	}
	if err := nodesearch.WriteMark(n.searchMarkPath(), m); err != nil {
		n.log.Warn("search: no stop mark; the next start indexes every URL again", "err", err)
	}
}

// ownedRanges returns the key ranges (pred(v), v] of the node's virtual
// servers whose predecessor it knows: the keys it owns now (ring.Owns).
func (n *Node) ownedRanges() []archive.KeyRange {
	var rs []archive.KeyRange
	for _, v := range n.ring.Vnodes() {
		if p, ok := n.ring.Predecessor(v.ID); ok {
			rs = append(rs, archive.KeyRange{A: p.ID, B: v.ID})
		}
	}
	return rs
}

// versionImported is the archive's OnImport: a replica's record of a URL
// this node owns is left to the next start's backfill (node/search
// Imported).
func (n *Node) versionImported(v archive.Version) {
	if n.search != nil && n.ring.Owns(v.Key) {
		n.search.Imported(v)
	}
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
	var read search.Versions = n.store
	if n.recent != nil {
		read = recentReader{n.store, n.recent}
	}
	ix := &search.Indexer{Archive: read, Sink: n.search, Docs: n.searchStore}
	known := n.ring.Subscribe(64) // before the first look: no range change is missed
	n.goRun(func(ctx context.Context) {
		if err := n.purgePostings(ctx, n.store.URLPurges()); err != nil {
			n.log.Warn("search: purge postings", "err", err)
		}
		ok := waitRangesKnown(ctx, n.rangesKnown, known.C, searchRangesWait)
		known.Unsubscribe()
		if !ok && ctx.Err() == nil {
			n.log.Warn("search: some virtual server's predecessor is still unknown; backfilling the ranges known", "waited", searchRangesWait)
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

// searchRangesWait bounds how long the start's backfill waits for every
// local virtual server to learn its predecessor (its range): a joining
// node learns it from the predecessor's next stabilization, and a
// backfill begun before then would take none of that range's URLs,
// which after a crash nothing else indexes again.
const searchRangesWait = time.Minute

// rangesKnown reports whether every local virtual server knows its
// predecessor, and so the key range it owns.
func (n *Node) rangesKnown() bool {
	for _, v := range n.ring.Vnodes() {
		if _, ok := n.ring.Predecessor(v.ID); !ok {
			return false
		}
	}
	return true
}

// waitRangesKnown waits until known returns true, looking again at each
// ring event (a range change) and at least every second, for at most
// limit. It returns whether known did; false when ctx ended or limit
// passed first.
func waitRangesKnown(ctx context.Context, known func() bool, events <-chan ring.Event, limit time.Duration) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !known() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return known()
		case _, open := <-events:
			if !open {
				events = nil
			}
		case <-tick.C:
		}
	}
	return true
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
