package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/node/links"
	"github.com/herod-archive/herod/node/rank"
	"github.com/herod-archive/herod/ring"
)

// The link index (node/links) and PageRank (node/rank) as the node runs
// them: the databases under the data directory, their protocols through
// the kit, the sweep that indexes the pages this node owns, and the
// services the gateway and `herod rank` call.

// DefaultLinkSweep is Config.LinkSweep when zero: how often the node
// reads the new versions of the pages it owns into the link index.
const DefaultLinkSweep = 10 * time.Minute

// linkIndex is the node's link index and rank engine.
type linkIndex struct {
	index   *links.Index
	indexer *links.Indexer
	server  *links.Server
	router  *links.Router
	verify  *links.Verifier // checks records before the gateway lists them
	ranks   *rank.Store
	engine  *rank.Engine
	running sync.Mutex // one rank run coordinated at a time

	// The ring's events (linkSweepLoop) and its count of dropped ones
	// when last looked at (checkDrops; it only grows).
	sub     *ring.Subscription
	dropMu  sync.Mutex
	dropped uint64

	// The sweep's plan (linksweep.go): the sources marked since the last
	// sweep, and the slow pass's place in the store.
	dirty    *links.Dirty
	pass     slowPass
	stats    sweepCounters
	sweeping chan struct{} // holds a token while a sweep runs (SweepLinks)
	chunk    int           // stale sources a full sweep reads at a time (fullChunk when 0)
}

// setupLinkIndex opens the link index and the rank store (New).
func (n *Node) setupLinkIndex() error {
	idx, err := links.Open(filepath.Join(n.cfg.DataDir, "links"), links.Config{Logger: n.log.With("sub", "links")})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	rs, err := rank.OpenStore(filepath.Join(n.cfg.DataDir, "rank"))
	if err != nil {
		idx.Close()
		return fmt.Errorf("node: %w", err)
	}
	li := &linkIndex{index: idx, ranks: rs,
		verify: &links.Verifier{Logger: n.log.With("sub", "links")}, dirty: links.NewDirty(0),
		sweeping: make(chan struct{}, 1)}
	li.server = &links.Server{Index: idx, Keep: n.linkFilter}
	n.linkIdx = li
	return nil
}

// linkFilter leaves out of the index's answers the links of sources
// that access rules exclude (listed neither as shown nor as blocked) or
// that a purge order covers.
func (n *Node) linkFilter() links.Filter {
	purges := n.store.URLPurges()
	return func(source string, from time.Time) bool {
		for _, p := range purges {
			if p.Covers(source, from) {
				return false
			}
		}
		return n.access == nil || n.access.table.Decide(source, from).Listed()
	}
}

// startLinkIndex serves the two protocols and starts the sweep (Start,
// once the ring exists).
func (n *Node) startLinkIndex() {
	li := n.linkIdx
	li.router = &links.Router{
		Ring: n.ring, Self: n.self.Peer, Local: li.server,
		Client:  &links.Client{Open: n.openStream},
		Holders: n.cfg.Replicas,
		Logger:  n.log.With("sub", "links"),
	}
	li.indexer = &links.Indexer{Index: li.index, Archive: n.store, Send: li.router.Deliver}
	li.engine = &rank.Engine{
		Self: n.self, Graph: n.rankGraph, Locate: n.ring.Lookup, Store: li.ranks,
		Transport: rankTransport{n}, Logger: n.log.With("sub", "rank"),
	}
	n.kit.MustHandle(li.server.Spec())
	n.kit.MustHandle(kit.Spec{ID: rank.Protocol, Handle: li.serveRank, MaxFrame: rank.MaxBody,
		MaxRequest: rank.MaxHeader + rank.MaxBody + 20, Deadline: 10 * time.Minute, MaxActive: 16})
	li.sub = n.ring.Subscribe(64)
	n.goRun(n.linkSweepLoop)
}

// closeLinkIndex closes the databases (after the node's loops ended).
func (n *Node) closeLinkIndex() error {
	if n.linkIdx == nil {
		return nil
	}
	return errors.Join(n.linkIdx.index.Close(), n.linkIdx.ranks.Close())
}

// linkSweepLoop indexes the new versions of the pages this node owns
// every LinkSweep (never when it is negative), and watches the ring's
// events whatever LinkSweep is: a range this node took over makes the
// next sweep, timed or asked for (SweepLinks), one of every source.
func (n *Node) linkSweepLoop(ctx context.Context) {
	li := n.linkIdx
	defer li.sub.Unsubscribe()
	every := n.cfg.LinkSweep
	if every == 0 {
		every = DefaultLinkSweep
	}
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	evs := li.sub.C
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-evs:
			if !ok { // the ring closed
				evs = nil
				continue
			}
			// A range this node owns grew: sources it took over were
			// imported (never marked), so the next sweep reads all. A
			// range that only shrank brings nothing to read.
			if ev.Kind == ring.RangeChanged && rangeGrew(ev.OldRange, ev.NewRange) {
				li.dirty.MarkAll()
			}
			continue
		case <-tick:
		}
		if _, err := n.SweepLinks(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("link index sweep", "err", err)
		}
	}
}

// checkDrops asks for a sweep of every source when the ring dropped
// events since the last look: a dropped event may have moved a range.
func (li *linkIndex) checkDrops() {
	li.dropMu.Lock()
	defer li.dropMu.Unlock()
	if newDrops(li.sub.Dropped(), &li.dropped) {
		li.dirty.MarkAll()
	}
}

// newDrops reports whether a subscription's count of dropped events,
// total, grew past *seen, the count at the last call, and records it.
func newDrops(total uint64, seen *uint64) bool {
	if total == *seen {
		return false
	}
	*seen = total
	return true
}

// rangeGrew reports whether a vnode's range moved from old to cur so
// that it holds keys it did not (any change it cannot tell counts): a
// node that joined in front of the vnode only shrinks it.
func rangeGrew(old, cur ring.Range) bool {
	switch {
	case !cur.Known:
		return false // it owns nothing now
	case !old.Known || old.End != cur.End:
		return true
	case old.Start == old.End:
		return false // it held the whole circle
	}
	return old.Start != cur.Start && cur.Contains(old.Start)
}

// SweepLinks reads into the link index the versions of the pages this
// node owns that it has not read yet, and sends their records to the
// targets' holders. It returns how many records it sent. It reads the
// sources that got a version since the last sweep or whose records were
// not delivered (marked), and the stale sources of a slice of the slow
// pass that looks at every source once a crawl day (linksweep.go); the
// first sweep after a start, or after the marks overflowed, the node's
// ranges grew or ring events were dropped, reads every stale source of
// the store: one whose newest version is after the last one read and
// delivered, or that was never delivered. One sweep runs at a time: a
// call while another sweeps waits for it (or for ctx), so that it
// returns with every version marked before it read, and no source is
// read by two sweeps at once.
func (n *Node) SweepLinks(ctx context.Context) (int, error) {
	select {
	case n.linkIdx.sweeping <- struct{}{}:
	case <-ctx.Done():
		return 0, fmt.Errorf("link sweep: %w", ctx.Err())
	}
	defer func() { <-n.linkIdx.sweeping }()
	n.linkIdx.checkDrops()
	marked, full := n.linkIdx.dirty.Take()
	var sent int
	var err error
	if full {
		sent, err = n.sweepAll(ctx)
	} else {
		sent, err = n.sweepMarked(ctx, marked)
	}
	if err != nil {
		return sent, fmt.Errorf("link sweep: %w", err)
	}
	return sent, nil
}

// Links answers "which pages linked to target at at" ring-wide (its
// holders' records merged), at most limit (0: all).
func (n *Node) Links(ctx context.Context, target string, at time.Time, limit int) (links.Result, error) {
	return n.linkIdx.router.Links(ctx, target, at, limit)
}

// endOfDay is the last instant of crawl day day.
func (n *Node) endOfDay(day int64) time.Time {
	secs := int64(n.cfg.DayLength / time.Second)
	if secs <= 0 {
		secs = int64(DefaultDayLength / time.Second)
	}
	return time.Unix((day+1)*secs, 0).Add(-time.Nanosecond)
}

// rankGraph is the rank engine's Graph: the out-links of every page this
// node owns, from its newest version live at the end of day (the links a
// reader follows of a successful HTML page; none for other versions),
// until they cost more than maxBytes (rank.PageBytes).
func (n *Node) rankGraph(ctx context.Context, day int64, maxBytes int64) (map[string][]string, error) {
	end := n.endOfDay(day)
	g := map[string][]string{}
	var held int64
	err := n.store.URLs(ctx, archive.Query{}, func(u string) error {
		if !n.ownsURL(u) {
			return nil
		}
		v, err := n.store.At(ctx, u, end)
		if errors.Is(err, archive.ErrNotFound) {
			return nil // no version yet that day
		}
		if err != nil {
			return err
		}
		var ls []string
		if v.Status >= 200 && v.Status <= 299 {
			c, err := n.store.Read(ctx, v)
			if err != nil {
				return err
			}
			if base, err := url.Parse(u); err == nil {
				ls, _ = crawl.ExtractRequisites(base, v.ContentType, c.Body)
			}
		}
		if held += rank.PageBytes(u, ls); held > maxBytes {
			return fmt.Errorf("%w: the pages read by %s cost %d bytes, over %d (%d pages)", rank.ErrTooLarge, u, held, maxBytes, len(g))
		}
		g[u] = ls
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rank graph: %w", err)
	}
	return g, nil
}

// rankMembers returns every real node of the ring, walking it clockwise
// from this node's first virtual server, one lookup per virtual server.
func (n *Node) rankMembers(ctx context.Context) ([]ring.Contact, error) {
	st := n.ring.Status()
	if len(st.Vnodes) == 0 {
		return nil, errors.New("rank: not in a ring")
	}
	start := st.Vnodes[0].ID
	seen := map[string]bool{}
	var out []ring.Contact
	key := start
	for range 1 << 16 {
		o, err := n.ring.Lookup(ctx, key.AddPow2(0))
		if err != nil {
			return nil, fmt.Errorf("rank members: %w", err)
		}
		if !seen[o.Peer] {
			seen[o.Peer] = true
			out = append(out, o.Contact)
		}
		if o.ID == start || id.InHalfOpen(start, key, o.ID) {
			return out, nil
		}
		key = o.ID
	}
	return nil, errors.New("rank members: the walk did not come round")
}

// RunRank runs PageRank over the ring for crawl day day, coordinated by
// this node; one run at a time.
func (n *Node) RunRank(ctx context.Context, day int64, o rank.Options) (rank.Summary, error) {
	li := n.linkIdx
	if !li.running.TryLock() {
		return rank.Summary{}, errors.New("rank: a run is in progress")
	}
	defer li.running.Unlock()
	members, err := n.rankMembers(ctx)
	if err != nil {
		return rank.Summary{}, err
	}
	o.Day = day
	s, err := (&rank.Coordinator{Transport: rankTransport{n}}).Run(ctx, members, o)
	if err != nil {
		return s, err
	}
	n.log.Info("rank run done", "run", s.Run, "day", day, "members", s.Members, "vertices", s.Vertices,
		"edges", s.Edges, "iterations", s.Iterations, "perIteration", s.PerIteration, "bytesPerEdge", s.PerEdge)
	return s, nil
}

// Rank returns the rank of url from the newest run at or before day,
// asked of url's owner (whose run held it).
func (n *Node) Rank(ctx context.Context, u string, day int64) (float64, rank.RunInfo, error) {
	o, err := n.ring.Lookup(ctx, id.OfString(u))
	if err != nil {
		return 0, rank.RunInfo{}, err
	}
	if o.Peer == n.self.Peer {
		return n.linkIdx.ranks.Rank(u, day)
	}
	var rep rank.Reply
	var body []byte
	if rep, body, err = (rankTransport{n}).Call(ctx, o.Contact, rank.Header{Op: rank.OpGet, Day: day, Count: 1}, []byte(u)); err != nil {
		return 0, rank.RunInfo{}, err
	}
	return rank.DecodeGet(rep, body)
}

// LocalRank returns the rank this node stored for url (the CDX's field).
func (n *Node) LocalRank(u string, day int64) (float64, bool) {
	v, _, err := n.linkIdx.ranks.Rank(u, day)
	return v, err == nil
}

// serveRank serves the rank protocol: a header, a body, a reply and its
// body.
func (li *linkIndex) serveRank(ctx context.Context, q *kit.Request) error {
	var h rank.Header
	if err := q.ReadJSON(rank.MaxHeader, &h); err != nil {
		return err
	}
	body, err := q.ReadFrame(rank.MaxBody)
	if err != nil {
		return err
	}
	var rep rank.Reply
	var rb []byte
	if h.Op == rank.OpGet {
		rep, rb = rank.AnswerGet(li.ranks, h, body)
	} else if rep, rb, err = li.engine.HandleRemote(ctx, q.Member.Peer, h, body); err != nil {
		rep = rank.Reply{Error: err.Error()}
	}
	if err := q.Reply(rep); err != nil {
		return err
	}
	return wire.WriteFrame(q.Stream(), rb)
}

// rankTransport carries the rank protocol over the node's streams, and
// to this node's own engine without one.
type rankTransport struct{ n *Node }

func (t rankTransport) Call(ctx context.Context, to ring.Contact, h rank.Header, body []byte) (rank.Reply, []byte, error) {
	li := t.n.linkIdx
	if to.Peer == t.n.self.Peer {
		if h.Op == rank.OpGet {
			rep, rb := rank.AnswerGet(li.ranks, h, body)
			return rep, rb, nil
		}
		return li.engine.Handle(ctx, h, body)
	}
	s, err := t.n.openStream(ctx, to, rank.Protocol)
	if err != nil {
		return rank.Reply{}, nil, err
	}
	defer s.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(d)
	} else {
		_ = s.SetDeadline(time.Now().Add(10 * time.Minute))
	}
	if err := wire.WriteJSON(s, h); err != nil {
		_ = s.Reset()
		return rank.Reply{}, nil, fmt.Errorf("rank %s: %w", h.Op, err)
	}
	if err := wire.WriteFrame(s, body); err != nil {
		_ = s.Reset()
		return rank.Reply{}, nil, fmt.Errorf("rank %s: %w", h.Op, err)
	}
	_ = s.CloseWrite()
	br := bufio.NewReader(s)
	var rep rank.Reply
	if err := wire.ReadJSON(br, rank.MaxHeader, &rep); err != nil {
		_ = s.Reset()
		return rank.Reply{}, nil, fmt.Errorf("rank %s: reply: %w", h.Op, err)
	}
	rb, err := wire.ReadFrame(br, rank.MaxBody)
	if err != nil {
		_ = s.Reset()
		return rank.Reply{}, nil, fmt.Errorf("rank %s: reply: %w", h.Op, err)
	}
	if rep.Error != "" {
		return rep, nil, fmt.Errorf("rank %s at %s: %s", h.Op, to.Addr, rep.Error)
	}
	return rep, rb, nil
}

// gatewayLinks is the gateway's view of the link index and PageRank.
type gatewayLinks struct{ n *Node }

var _ gateway.LinkIndex = gatewayLinks{}

// Links answers a page of "which pages linked to u as of at": the
// holders' records after the first offset, at most limit, each listed
// only once the Verifier read its source capture through src (the
// gateway's archive: verified from its holders, access rules and
// robots.txt applied) and found the link there. A record comes from the
// source's owner through the target's holders, and either may lie.
func (g gatewayLinks) Links(ctx context.Context, u string, at time.Time, offset, limit int, src gateway.CaptureReader) (gateway.LinksAnswer, error) {
	if offset < 0 || limit <= 0 {
		return gateway.LinksAnswer{}, fmt.Errorf("links: offset %d, limit %d", offset, limit)
	}
	res, err := g.n.Links(ctx, u, at, offset+limit+1)
	if err != nil {
		return gateway.LinksAnswer{}, err
	}
	recs := res.Records[min(offset, len(res.Records)):]
	out := gateway.LinksAnswer{URL: u, More: res.More}
	if len(recs) > limit {
		out.Next = offset + limit
		out.More += len(recs) - limit
		recs = recs[:limit]
	}
	chk := g.n.linkIdx.verify.Verify(ctx, src, recs, at)
	out.Dropped, out.Unchecked = chk.Dropped, chk.Unchecked
	out.Links = make([]gateway.Link, len(chk.Records))
	for i, r := range chk.Records {
		out.Links[i] = gateway.Link{Source: r.Source, Anchor: r.Anchor, From: r.From, Until: r.Until}
	}
	return out, nil
}

// LinkVerifyStats reports what the link index's Verifier showed, dropped
// and could not check.
func (n *Node) LinkVerifyStats() links.VerifyStats { return n.linkIdx.verify.Stats() }

func (g gatewayLinks) Rank(ctx context.Context, u string, at time.Time) (gateway.RankAnswer, error) {
	v, info, err := g.n.Rank(ctx, u, g.n.store.DayOf(at))
	if errors.Is(err, rank.ErrNoRank) {
		return gateway.RankAnswer{}, fmt.Errorf("%w: %w", gateway.ErrNoRank, err)
	}
	if err != nil {
		return gateway.RankAnswer{}, err
	}
	return gateway.RankAnswer{URL: u, Rank: v, Day: g.n.endOfDay(info.Day - 1).Add(time.Nanosecond).UTC(), Run: info.Run}, nil
}

func (g gatewayLinks) RunRank(ctx context.Context, day time.Time) (any, error) {
	return g.n.RunRank(ctx, g.n.store.DayOf(day), rank.Options{})
}
