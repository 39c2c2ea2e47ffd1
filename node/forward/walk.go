package forward

import (
	"context"
	"fmt"
	"slices"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// walk delivers links, sorted by key, to their owners by walking the ring
// clockwise from the owner of the first key. It returns the links the
// owners acknowledged and those to try again.
//
// The owner of key k is the first virtual server at or after k, so it owns
// every key from k up to its own id; the walk hands it that run of links and
// continues with the next key, whose owner the last recipient named: it
// asked for the successor at or past that key (see deliverRun; in replica
// mode the whole list, and nextOwner picks from it). Only when the recipient's
// list does not reach the key — a long stretch of the ring without links,
// or a failed recipient — does the walk spend another lookup.
//
// Outside replica mode, the runs whose owners the node's own tables know
// (Router.LocalOwner: a small ring knows them all) are not walked: they
// are gathered per real node and handed over in one batch per node and
// hop count (byPeer), since a recipient takes every link its node owns,
// whichever of its virtual servers owns it. Only the others are walked.
func (f *Forwarder) walk(ctx context.Context, sorted []pendingLink) (done, failed []pendingLink) {
	f.walks.Add(1)
	var (
		cur   ring.Node
		have  bool
		succs []ring.Node
		local byPeer
	)
	defer func() {
		d, fl := f.deliverPeers(ctx, &local)
		done, failed = append(done, d...), append(failed, fl...)
	}()
	for i := 0; i < len(sorted); {
		k := sorted[i].key
		if f.cfg.Replicas <= 1 {
			if o, ok := f.cfg.Ring.LocalOwner(k); ok {
				j := i + 1
				for j < len(sorted) && owns(o.ID, k, sorted[j].key) {
					j++
				}
				local.add(o, sorted[i:j])
				i, have = j, false
				continue
			}
		}
		if !have {
			f.lookups.Add(1)
			o, err := f.cfg.Ring.Lookup(ctx, k)
			if err != nil {
				f.note(fmt.Errorf("lookup: %w", err))
				return done, append(failed, sorted[i:]...)
			}
			cur = o
		}
		j := i + 1
		for j < len(sorted) && owns(cur.ID, k, sorted[j].key) {
			j++
		}
		run := sorted[i:j]
		var (
			sent, rest []pendingLink
			err        error
			next       *id.ID
		)
		if j < len(sorted) {
			next = &sorted[j].key
		}
		succs, sent, rest, err = f.deliverRun(ctx, cur, run, next)
		f.countDelivered(cur, sent)
		done = append(done, sent...)
		if err != nil {
			f.note(fmt.Errorf("deliver to %s (vs %d): %w", cur.Addr, cur.Index, err))
			failed = append(failed, rest...)
			have = false
			i = j
			continue
		}
		i = j
		if i < len(sorted) {
			cur, have = nextOwner(cur.ID, succs, sorted[i].key)
		}
	}
	return done, failed
}

// byPeer gathers runs of links per real node owning them, in the order
// the nodes were met; each node's runs are addressed to the first of its
// virtual servers met.
type byPeer struct {
	order []ring.Node
	links map[string][]pendingLink
}

func (g *byPeer) add(owner ring.Node, run []pendingLink) {
	if g.links == nil {
		g.links = make(map[string][]pendingLink)
	}
	if _, ok := g.links[owner.Peer]; !ok {
		g.order = append(g.order, owner)
	}
	g.links[owner.Peer] = append(g.links[owner.Peer], run...)
}

// deliverPeers hands each real node of g its links, one batch per hop
// count and kind (deliverRun without a next key), and returns the links
// delivered and those to try again.
func (f *Forwarder) deliverPeers(ctx context.Context, g *byPeer) (done, failed []pendingLink) {
	for _, to := range g.order {
		_, sent, rest, err := f.deliverRun(ctx, to, g.links[to.Peer], nil)
		f.countDelivered(to, sent)
		done = append(done, sent...)
		if err != nil {
			f.note(fmt.Errorf("deliver to %s: %w", to.Addr, err))
			failed = append(failed, rest...)
		}
	}
	return done, failed
}

// deliverRun hands run, the links that owner owns, to it: one batch per
// hop count, since a batch carries one count and its recipient passes on
// what it does not own with that count plus one (and keeps links at
// maxHops): a fresh link must not travel with the count of a link that
// was passed on before. The last batch asks for the successor that owns
// next (WantNext), if there is a next key; in replica mode every batch
// asks for owner's successor list instead, and what owner acknowledged is
// handed to the replicas chosen from it (replicate). It returns the
// successor list of the recipient's last answer, the links delivered and,
// after a failed delivery, err and the links not delivered.
func (f *Forwarder) deliverRun(ctx context.Context, owner ring.Node, run []pendingLink, next *id.ID) (succs []ring.Node, sent, rest []pendingLink, err error) {
	replicas := f.cfg.Replicas > 1
	parts := byHops(run)
	for n, part := range parts {
		b := Batch{URLs: urls(part), Hops: part[0].hops, Requisites: part[0].req, Want: WantNone}
		switch {
		case replicas:
			b.Want = WantAll
		case n == len(parts)-1 && next != nil:
			b.Want, b.Next = WantNext, *next
		}
		var ss []ring.Node
		if ss, err = f.cfg.Deliver(ctx, owner, b); err != nil {
			for _, p := range parts[n:] {
				rest = append(rest, p...)
			}
			break
		}
		f.hops.Add(1)
		succs = ss
		sent = append(sent, part...)
	}
	if replicas && len(sent) > 0 {
		f.replicate(ctx, owner, succs, sent)
	}
	return succs, sent, rest, err
}

// countDelivered counts links delivered to to: on this node or another.
func (f *Forwarder) countDelivered(to ring.Node, links []pendingLink) {
	if to.Peer == f.cfg.LocalPeer {
		f.local.Add(int64(len(links)))
	} else {
		f.sent.Add(int64(len(links)))
	}
}

// byHops splits links by hop count, in increasing count, and within a
// count plain links before requisites (a batch carries one kind), each
// part in the links' order.
func byHops(links []pendingLink) [][]pendingLink {
	first := links[0]
	same := true
	for _, l := range links {
		same = same && l.hops == first.hops && l.req == first.req
	}
	if same {
		return [][]pendingLink{links}
	}
	type kind struct {
		hops int
		req  bool
	}
	m := map[kind][]pendingLink{}
	var kinds []kind
	for _, l := range links {
		k := kind{l.hops, l.req}
		if _, ok := m[k]; !ok {
			kinds = append(kinds, k)
		}
		m[k] = append(m[k], l)
	}
	slices.SortFunc(kinds, func(a, b kind) int {
		if a.hops != b.hops {
			return a.hops - b.hops
		}
		if a.req == b.req {
			return 0
		}
		if b.req {
			return -1
		}
		return 1
	})
	out := make([][]pendingLink, len(kinds))
	for i, k := range kinds {
		out[i] = m[k]
	}
	return out
}

// replicate hands run, which owner has acknowledged, to the virtual servers
// of the next Replicas-1 distinct real nodes in owner's successor list, the
// thesis's replica mode: those nodes crawl the links too, so a replica of
// each page exists from the first day. A failure is counted and not
// retried: the owner holds the links, and replication of the archive
// repairs what a missed replica crawl leaves out.
func (f *Forwarder) replicate(ctx context.Context, owner ring.Node, succs []ring.Node, run []pendingLink) {
	seen := map[string]bool{owner.Peer: true}
	need := f.cfg.Replicas - 1
	for _, s := range succs {
		if need == 0 {
			return
		}
		if seen[s.Peer] {
			continue
		}
		seen[s.Peer] = true
		need--
		for _, req := range []bool{false, true} {
			part := slices.DeleteFunc(slices.Clone(run), func(l pendingLink) bool { return l.req != req })
			if len(part) == 0 {
				continue
			}
			if _, err := f.cfg.Deliver(ctx, s, Batch{URLs: urls(part), Hops: highestHops(part), Replica: true, Requisites: req, Want: WantNone}); err != nil {
				f.note(fmt.Errorf("replica to %s: %w", s.Addr, err))
				continue
			}
			f.replicas.Add(int64(len(part)))
		}
	}
}

// owns reports whether the virtual server at owner, known to own key first,
// also owns key x: whether x lies in [first, owner].
func owns(owner, first, x id.ID) bool {
	if x == first {
		return true
	}
	if first == owner {
		return false
	}
	return id.InHalfOpen(x, first, owner)
}

// nextOwner finds the owner of key among succs, the successor list of the
// virtual server at from: the first successor s with key in (prev, s],
// walking prev from from. ok is false when the list does not reach key.
func nextOwner(from id.ID, succs []ring.Node, key id.ID) (ring.Node, bool) {
	prev := from
	for _, s := range succs {
		if id.InHalfOpen(key, prev, s.ID) && prev != s.ID {
			return s, true
		}
		prev = s.ID
	}
	return ring.Node{}, false
}

func urls(links []pendingLink) []string {
	out := make([]string, len(links))
	for i, l := range links {
		out[i] = l.url
	}
	return out
}

func highestHops(links []pendingLink) int {
	h := 0
	for _, l := range links {
		h = max(h, l.hops)
	}
	return h
}
