package ringpage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/herod-archive/herod/ring"
)

// States of a Member.
const (
	// StateUp: in this node's routing state now, not suspected.
	StateUp = "up"
	// StateDead: suspected of having failed (calls to it failed), or gone
	// from the routing state while suspected, without announcing a leave
	// to this node.
	StateDead = "dead"
	// StateDeparted: it announced its leave to this node (a graceful
	// stop), or it went from the routing state without being suspected
	// (or the ring outgrew this node's view of it). A node that leaves is
	// departed on its ring neighbours, which it tells; others may find it
	// dead.
	StateDeparted = "departed"
)

// DownFile is the usual name of Service.Path in a node's data directory.
const DownFile = "ring-down.json"

// DefaultKeep is how long a dead or departed node stays listed.
const DefaultKeep = 48 * time.Hour

// Member is a real node this node has known: up now, or dead or departed
// within Keep.
type Member struct {
	Peer  string `json:"peer"`
	Addr  string `json:"addr,omitempty"`
	State string `json:"state"` // StateUp, StateDead or StateDeparted
	// Since is when the node entered State as this node observed it: for
	// a dead or departed node, when the ring dropped or suspected it,
	// which is within seconds of its failure (the ring's failure
	// detection and an observation period).
	Since time.Time `json:"since,omitzero"`
}

// members is the memory behind Service.Members. Guarded by mu.
type members struct {
	mu     sync.Mutex
	seen   map[string]*Member
	loaded bool   // Path read
	saved  []byte // what Path holds
}

// Observe records the real nodes of this node's routing state now (its
// virtual servers' predecessors, successors and fingers): those present
// and not suspected are up; a node that announced its leave to this one
// (ring.Status.Left) and is suspected or gone is departed; one suspected
// otherwise is dead, and one gone unsuspected departed. Nodes down for
// longer than Keep are forgotten. Run calls it
// periodically; View calls it too.
func (sv *Service) Observe() {
	st := sv.Status()
	now := sv.now()
	present := map[string]string{} // peer → address
	note := func(c ring.Contact) {
		if c.Peer != "" && c.Peer != st.Self.Peer {
			present[c.Peer] = c.Addr
		}
	}
	for _, v := range st.Vnodes {
		if v.Predecessor != nil {
			note(v.Predecessor.Contact)
		}
		for _, s := range v.Successors {
			note(s.Contact)
		}
		for _, f := range v.Fingers {
			note(f.Node.Contact)
		}
	}
	suspect, left := map[string]bool{}, map[string]bool{}
	for _, p := range st.Suspects {
		suspect[p] = true
	}
	for _, p := range st.Left {
		left[p] = true
	}
	m := &sv.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]*Member{}
	}
	if !m.loaded {
		m.loaded = true
		sv.load()
	}
	defer sv.save()
	for p, addr := range present {
		x := m.seen[p]
		if x == nil {
			x = &Member{Peer: p}
			m.seen[p] = x
		}
		if addr != "" {
			x.Addr = addr
		}
		switch {
		case !suspect[p]:
			x.set(StateUp, now)
		case left[p]:
			x.set(StateDeparted, now)
		default:
			x.set(StateDead, now)
		}
	}
	for p, x := range m.seen {
		if _, ok := present[p]; ok {
			continue
		}
		switch {
		case left[p]:
			x.set(StateDeparted, now)
		case x.State == StateUp && suspect[p]:
			x.set(StateDead, now)
		case x.State == StateUp:
			x.set(StateDeparted, now)
		}
		if now.Sub(x.Since) > sv.keep() {
			delete(m.seen, p)
		}
	}
}

// set moves x to state at now (Since changes with the state only).
func (x *Member) set(state string, now time.Time) {
	if x.State != state {
		x.State, x.Since = state, now
	}
}

// Members returns the real nodes other than this one that this node has
// known within Keep, as last observed, sorted by address: up, dead or
// departed, with when they entered that state.
func (sv *Service) Members() []Member {
	m := &sv.mem
	m.mu.Lock()
	out := make([]Member, 0, len(m.seen))
	for _, x := range m.seen {
		out = append(out, *x)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int {
		if c := strings.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		return strings.Compare(a.Peer, b.Peer)
	})
	return out
}

// DefaultObserveInterval is the period of Run's observations: a node that
// fails is listed dead within it of the ring suspecting it.
const DefaultObserveInterval = time.Second

// Run observes the routing state every interval (DefaultObserveInterval
// when <= 0) until ctx ends, so that a node that fails or leaves is
// remembered even when no one looks at the /ring page.
func (sv *Service) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultObserveInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sv.Observe()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// load reads the dead and departed nodes kept in Path into the memory
// (a missing or unreadable file is an empty memory). Caller holds mem.mu.
func (sv *Service) load() {
	if sv.Path == "" {
		return
	}
	b, err := os.ReadFile(sv.Path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sv.log().Warn("ring page: cannot read the nodes that went down", "path", sv.Path, "err", err)
		}
		return
	}
	var down []Member
	if err := json.Unmarshal(b, &down); err != nil {
		sv.log().Warn("ring page: the file of nodes that went down is damaged; starting afresh", "path", sv.Path, "err", err)
		return
	}
	for _, x := range down {
		if x.Peer != "" && (x.State == StateDead || x.State == StateDeparted) && sv.mem.seen[x.Peer] == nil {
			sv.mem.seen[x.Peer] = &x
		}
	}
	sv.mem.saved = b
}

// save writes the dead and departed nodes to Path when they changed, so
// that they stay listed across a restart. Caller holds mem.mu.
func (sv *Service) save() {
	if sv.Path == "" {
		return
	}
	down := []Member{}
	for _, x := range sv.mem.seen {
		if x.State != StateUp {
			down = append(down, *x)
		}
	}
	slices.SortFunc(down, func(a, b Member) int { return strings.Compare(a.Peer, b.Peer) })
	b, err := json.Marshal(down)
	if err != nil || bytes.Equal(b, sv.mem.saved) {
		return
	}
	tmp := sv.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err == nil {
		err = os.Rename(tmp, sv.Path)
	}
	if err != nil {
		sv.log().Warn("ring page: cannot keep the nodes that went down", "path", sv.Path, "err", err)
		return
	}
	sv.mem.saved = b
}

func (sv *Service) now() time.Time {
	if sv.Clock != nil {
		return sv.Clock()
	}
	return time.Now()
}

func (sv *Service) keep() time.Duration {
	if sv.Keep > 0 {
		return sv.Keep
	}
	return DefaultKeep
}
