package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node/purge"
	"github.com/herod-archive/herod/node/status"
)

// Access rules (archive/access, docs/access.md): the node's own rules
// file (Config.AccessRules, reloaded when it changes) and the ring-wide
// rules of its purge book (orders of a listed authority, node/purge)
// make one access.Table, which the gateway enforces (gateway/access.go)
// and herod access edits through the admin API.

// accessRulesFile is the rules file in the data directory when
// Config.AccessRules names none.
const accessRulesFile = "access-rules"

// accessReload is how often the rules file is checked for changes.
const accessReload = 2 * time.Second

// nodeAccess is the node's access rules: gateway.AccessControl.
type nodeAccess struct {
	n     *Node
	table *access.Table
	file  *access.File
	// kick wakes the purger (startAccess) after the ring-wide rules
	// changed; a change of the rules file is seen within purgeCheck.
	kick chan struct{}
	// applied is the table generation whose purge rules the store
	// carries out (applyPurges), -1 before the first success; purged
	// counts the versions they removed.
	applied atomic.Int64
	purged  atomic.Int64
}

var _ gateway.AccessControl = (*nodeAccess)(nil)

// setupAccess loads the node's rules file. Called from New before
// setupPurge, which adds the ring-wide rules.
func (n *Node) setupAccess() error {
	path := n.cfg.AccessRules
	if path == "" {
		path = filepath.Join(n.cfg.DataDir, accessRulesFile)
	}
	t := access.NewTable(nil)
	f, err := access.OpenFile(path, t, n.log.With("sub", "access"))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.access = &nodeAccess{n: n, table: t, file: f, kick: make(chan struct{}, 1)}
	n.access.applied.Store(-1)
	return nil
}

// startAccess reloads the rules file when it changes, and carries out
// the purge rules in force whenever the rules change, until the node
// closes. Called from Start.
func (n *Node) startAccess() {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.access.file.Watch(n.ctx, accessReload)
	}()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.purgeLoop(n.ctx)
	}()
}

// Purge rules (docs/access.md). A rule of action purge, ring-wide or in
// the node's own rules file, removes the captures it covers (its key,
// prefix or exact, and its before/after window) from the store:
// archive.Store.PurgeURLs takes them out of the index, rewrites the
// segments that held them without their bytes and refuses them from then
// on, so neither this node's crawl nor replication brings them back
// (a replica's copy is refused at import, archive.ErrPurged). It is
// carried out in New, before the node serves anything (a purge a crash
// cut short is finished there), and by purgeLoop whenever the rules
// change. A purge rule removed or revoked lifts the refusal; what was
// removed does not come back. The deletion follows the rule's key and
// window alone: a more specific allow under a purge rule shows only what
// has not been removed yet.

// purgeCheck is how often purgeLoop looks for a change of the rules it
// was not woken for (the rules file, reloaded every accessReload).
const purgeCheck = time.Second

// urlPurge is the store's purge of a purge rule.
func urlPurge(r access.Rule) (archive.URLPurge, error) {
	k, err := r.Key()
	if err != nil {
		return archive.URLPurge{}, err
	}
	return archive.URLPurge{ID: r.ID(), SURT: k, Exact: r.Exact, After: r.After, Before: r.Before}, nil
}

// kickPurge wakes purgeLoop.
func (a *nodeAccess) kickPurge() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// applyPurges makes the store's URL purges those of the purge rules in
// force: it carries out the new ones (and finishes any cut short) and
// withdraws those no rule asks for any more. It returns the versions
// removed.
func (n *Node) applyPurges(ctx context.Context) (int, error) {
	gen := n.access.table.Generation()
	want := map[string]archive.URLPurge{}
	for _, l := range n.access.table.List() {
		if l.Action != access.Purge {
			continue
		}
		p, err := urlPurge(l.Rule)
		if err != nil {
			continue // the table keeps valid rules only
		}
		want[p.ID] = p
	}
	var errs []error
	for _, p := range n.store.URLPurges() {
		if _, ok := want[p.ID]; !ok {
			if err := n.store.Unpurge(p.ID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	ids := slices.Sorted(maps.Keys(want))
	removed := 0
	for _, id := range ids {
		k, err := n.store.PurgeURLs(ctx, want[id])
		removed += k
		if err != nil {
			errs = append(errs, err)
		}
	}
	n.access.purged.Add(int64(removed))
	if err := n.purgePostings(ctx, slices.Collect(maps.Values(want))); err != nil { // search.go
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return removed, errors.Join(errs...)
	}
	n.access.applied.Store(gen)
	return removed, nil
}

// purgeLoop runs applyPurges when the rules change, and again after a
// failure, until ctx ends.
func (n *Node) purgeLoop(ctx context.Context) {
	t := time.NewTicker(purgeCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.access.kick:
		case <-t.C:
		}
		if n.access.table.Generation() == n.access.applied.Load() {
			continue
		}
		removed, err := n.applyPurges(ctx)
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("purge rules not carried out; retrying", "err", err)
			}
			continue
		}
		if removed > 0 {
			n.log.Info("purge rules carried out", "versions", removed)
		}
	}
}

// PurgedByRules returns how many versions the node's purge rules removed
// from its store since it was made.
func (n *Node) PurgedByRules() int64 { return n.access.purged.Load() }

// DiskAccessRules returns the access rules the node whose data directory
// is dataDir enforces, read while it is stopped (herod export --data):
// its rules file (rulesFile, "" for the default in dataDir) and the
// ring-wide rules its purge book keeps.
func DiskAccessRules(dataDir, rulesFile string) (*access.Set, error) {
	if rulesFile == "" {
		rulesFile = filepath.Join(dataDir, accessRulesFile)
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("node: access rules: %w", err)
	}
	local, err := access.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("node: access rules %s: %w", rulesFile, err)
	}
	ring, err := purge.AccessRulesIn(filepath.Join(dataDir, purgeOrdersFile))
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	set, _ := access.NewSet(append(local, ring...))
	return set, nil
}

// accessStats counts the rules in force by source and what the gateway
// kept from readers (status.AccessStats).
func (n *Node) accessStats() status.AccessStats {
	var st status.AccessStats
	for _, l := range n.access.table.List() {
		if l.Source == access.Ring {
			st.Ring++
		} else {
			st.Local++
		}
	}
	if n.gw != nil {
		g := n.gw.AccessStats()
		st.Hidden, st.Blocked, st.RobotsErrors = g.Hidden, g.Blocked, g.RobotsErrors
	}
	return st
}

// AccessRules returns the node's access rules: local and ring-wide.
func (n *Node) AccessRules() *access.Table { return n.access.table }

// Decide implements gateway.AccessControl.
func (a *nodeAccess) Decide(url string, t time.Time) access.Decision { return a.table.Decide(url, t) }

// List implements gateway.AccessControl.
func (a *nodeAccess) List() []access.Listed { return a.table.List() }

// Add implements gateway.AccessControl: to the rules file, or ring-wide
// as an order this node signs (carried out by the nodes that list it as
// a purge authority).
func (a *nodeAccess) Add(ctx context.Context, r access.Rule, ring bool) error {
	if !ring {
		defer a.kickPurge()
		return a.file.Add(r)
	}
	if err := a.n.purge.IssueAccess(ctx, a.n.identity, r, false); err != nil {
		return fmt.Errorf("node access: %w", err)
	}
	return nil
}

// Remove implements gateway.AccessControl: the rules of idOrURL (an ID,
// or every rule keyed by that URL or SURT prefix), from the file or, as
// revocations this node signs, ring-wide.
func (a *nodeAccess) Remove(ctx context.Context, idOrURL string, ring bool) (int, error) {
	if !ring {
		defer a.kickPurge()
		return a.file.Remove(idOrURL)
	}
	key, err := access.SURT(idOrURL)
	if err != nil {
		key = idOrURL
	}
	n := 0
	for _, r := range a.n.purge.AccessRules() {
		k, _ := r.Key()
		if r.ID() != idOrURL && k != key && r.SURT != idOrURL {
			continue
		}
		if err := a.n.purge.IssueAccess(ctx, a.n.identity, r, true); err != nil {
			return n, fmt.Errorf("node access: %w", err)
		}
		n++
	}
	return n, nil
}
