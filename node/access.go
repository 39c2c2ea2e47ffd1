package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

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
	n.access = &nodeAccess{n: n, table: t, file: f}
	return nil
}

// startAccess reloads the rules file when it changes, until the node
// closes. Called from Start.
func (n *Node) startAccess() {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.access.file.Watch(n.ctx, accessReload)
	}()
}

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
