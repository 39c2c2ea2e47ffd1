package access

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Source names where a Table's rules come from.
type Source string

// Sources of a node's rules.
const (
	Local Source = "local" // the operator's own rules file
	Ring  Source = "ring"  // orders of a listed authority (node/purge)
)

// Listed is a rule and the source it came from.
type Listed struct {
	ID     string `json:"id"`
	Source Source `json:"source"`
	Rule
}

// Table holds a node's current rules, from several sources, as one Set:
// Decide reads it without locks; Replace swaps in a source's new rules.
type Table struct {
	now func() time.Time

	mu      sync.Mutex
	sources map[Source][]Rule
	set     atomic.Pointer[Set]
	listed  atomic.Pointer[[]Listed]
	gen     atomic.Int64
}

// NewTable returns an empty Table; now tells the time of decisions
// (embargoes), nil meaning time.Now.
func NewTable(now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	t := &Table{now: now, sources: map[Source][]Rule{}}
	t.set.Store(&Set{})
	t.listed.Store(&[]Listed{})
	return t
}

// Replace sets the rules of src, leaving out (and returning) the invalid
// ones, and makes the new Set current.
func (t *Table) Replace(src Source, rules []Rule) map[int]error {
	_, bad := NewSet(rules)
	kept := make([]Rule, 0, len(rules))
	for i, r := range rules {
		if bad[i] == nil {
			kept = append(kept, r)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sources[src] = kept
	var all []Rule
	var listed []Listed
	srcs := make([]Source, 0, len(t.sources))
	for s := range t.sources {
		srcs = append(srcs, s)
	}
	slices.Sort(srcs)
	for _, s := range srcs {
		for _, r := range t.sources[s] {
			all = append(all, r)
			listed = append(listed, Listed{ID: r.ID(), Source: s, Rule: r})
		}
	}
	set, _ := NewSet(all)
	t.set.Store(set)
	t.listed.Store(&listed)
	t.gen.Add(1)
	return bad
}

// Set returns the current rules.
func (t *Table) Set() *Set { return t.set.Load() }

// List returns the current rules with their sources.
func (t *Table) List() []Listed { return slices.Clone(*t.listed.Load()) }

// Generation counts the changes made to the table (Replace calls).
func (t *Table) Generation() int64 { return t.gen.Load() }

// Decide is Set.Decide on the current rules at the table's time.
func (t *Table) Decide(url string, capture time.Time) Decision {
	return t.set.Load().Decide(url, capture, t.now())
}

// Now returns the table's time.
func (t *Table) Now() time.Time { return t.now() }
