package claim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Answering a claim is split in two: decide, a pure function of what the
// node knows about the claim at one point (answerState) that returns the
// next step (action), and Answer, the driver that takes the steps — it
// reads the day's sets under the mutex, sends claims along the chain of
// former owners, asks History — and feeds their results back to decide
// until the step is a reply.

// held is what the day's sets say of one URL.
type held struct {
	mine  bool      // fetched or being fetched here
	had   bool      // fetched by a former owner (or handed over)
	gone  bool      // granted to a newer owner
	grant awayClaim // the grant, with gone
}

// takenFor reports whether the URL is not q's claimer's to fetch: fetched
// here, or by a former owner, or granted to another claimer today (two
// nodes that both took the range: twins, or a view that changed). A grant
// to the same claimer is no obstacle: along a chain this node granted the
// URL to a former owner for the claimer, which may then ask here itself
// (a range taken twice today).
func (h held) takenFor(q Request, from ring.Node) bool {
	return h.mine || h.had || (h.gone && h.grant.vnode.Peer != from.Peer && h.grant.claimer != claimerOf(q))
}

// history is what Config.History said of the URL.
type history int

const (
	historyUnasked history = iota
	historyNotFetched
	historyFetched
)

// chainReply is one former owner's answer to a claim this node sent on.
type chainReply struct {
	rep Reply
	err error
}

// refused reports a former owner that refused the claim for now, or one
// further along its chain that did.
func (r chainReply) refused() bool {
	return (r.err != nil && errors.Is(r.err, ErrRefused)) || (r.err == nil && r.rep.Retry)
}

// answerState is what the node knows about one claim at one point of
// answering it. The driver fills it in step by step.
type answerState struct {
	self    string // this node's peer id
	maxHops int
	day     int64 // this node's day
	// elsewhere: one of this node's virtual servers lies between the
	// URL's key and the claimer (route). ours is the virtual server the
	// claimer took the range from.
	elsewhere bool
	ours      ring.Node
	// twin: ours's predecessor is another peer running the claimer's
	// virtual-server id.
	twin    bool
	held    held
	formers []ring.Node  // the former owners of the range on the day, oldest first
	replies []chainReply // their answers so far, in order
	history history
	// settled: held was read again after the chain and History, under
	// the mutex the driver keeps until it has applied the action.
	settled bool
}

// step is what the driver does next.
type step int

const (
	stepReply   step = iota // record the marks, answer with reply
	stepAsk                 // send ask to former; append the result to replies
	stepHistory             // ask Config.History; set history
	stepSettle              // read held again under the mutex, set settled, decide again
)

// action is decide's answer: the next step and what it needs.
type action struct {
	step   step
	reply  Reply     // stepReply
	former ring.Node // stepAsk
	ask    Request   // stepAsk
	// With stepReply: record the URL as fetched by a former owner (had),
	// as fetched here (mine), or as granted to q's claimer (grant).
	markHad, markMine, grant bool
	// cut, with stepHistory: the chain of former owners is cut here
	// (Stats.Cut).
	cut bool
	why string // for the debug log
}

func replyWith(r Reply, why string) action { return action{step: stepReply, reply: r, why: why} }

// decide returns the next step in answering claim q from the member from,
// given st. It is pure: the same state gives the same action.
func decide(q Request, from ring.Node, st answerState) action {
	switch {
	case st.elsewhere:
		// By our view the URL's owner lies before the claimer.
		return replyWith(Reply{Elsewhere: true}, "elsewhere")
	case q.Day != st.day:
		return replyWith(Reply{}, "another day: nothing recorded for it here")
	case q.Hops == 0 && st.twin:
		// Another peer at the claimer's IP runs the same virtual server
		// id and is our predecessor: the claimer is the twin that will
		// move away (ring), so the URL is not its to fetch but our
		// predecessor's, to which the claimer passes it on through us.
		// (Along a chain the sender asks for a claimer in front of it,
		// whose URL it is: TestTwinAlongTheChain.)
		return replyWith(Reply{Elsewhere: true}, "elsewhere: the sender is a twin of our predecessor")
	case st.held.takenFor(q, from):
		return replyWith(Reply{Taken: true}, "taken")
	}
	ch := chainOf(q, st.self)
	if q.Hops < st.maxHops {
		// This node took the range today too: the URL may be a former
		// owner's (which may be the claimer's node, by another of its
		// virtual servers). The oldest first: in a forming ring it held
		// the range longest.
		for _, r := range st.replies {
			if r.err == nil && r.rep.Taken {
				a := replyWith(Reply{Taken: true}, "taken along the chain")
				a.markHad = true
				return a
			}
		}
		if n := len(st.replies); n < len(st.formers) {
			f := st.formers[n]
			return action{step: stepAsk, former: f, why: "ask a former owner",
				ask: Request{URL: q.URL, Day: st.day, Vnode: st.ours, To: f.ID, Hops: q.Hops + 1, Chain: ch}}
		}
	}
	further, refused, cut := furtherOf(q, st, ch)
	switch {
	case st.history == historyUnasked:
		return action{step: stepHistory, cut: cut, why: "ask the store"}
	case st.history == historyFetched:
		a := replyWith(Reply{Taken: true}, "fetched here today, before a restart or before the set let it go")
		a.markMine = true
		return a
	case !st.settled:
		return action{step: stepSettle, why: "read the day's sets again"}
	case refused:
		// A former owner that refused may have fetched the URL: grant
		// nothing now, and let the claimer ask again.
		return replyWith(Reply{Retry: true}, "refused along the chain; the claimer asks again")
	case slices.Contains(q.Chain, st.self):
		// The chain of former owners came back to this node, which asked
		// along it, and no owner it reached fetched the URL: it belongs
		// to the claim that passed through here, so nothing is granted (a
		// grant would make this node drop it when the chain unwinds).
		return replyWith(further, "back at a node of the chain")
	}
	a := replyWith(further, "granted")
	a.grant = true
	return a
}

// furtherOf returns what this node's answer tells the claimer of a chain
// cut here or further along (where it goes on), whether a former owner
// refused the claim, and whether the chain is cut here: past MaxHops the
// first former owner not already in the chain is left to the claimer (one
// in the chain is a loop, ranges taken back and forth:
// TestChainLoopBetweenTwoNodes).
func furtherOf(q Request, st answerState, ch []string) (further Reply, refused, cut bool) {
	if q.Hops >= st.maxHops {
		for _, f := range st.formers {
			if !slices.Contains(ch, f.Peer) {
				next := f
				return Reply{Next: &next, Chain: ch}, false, true
			}
		}
		return Reply{}, false, false
	}
	for _, r := range st.replies {
		if r.err == nil && r.rep.Next != nil && further.Next == nil {
			further = Reply{Next: r.rep.Next, Chain: r.rep.Chain}
		}
		refused = refused || r.refused()
	}
	return further, refused, false
}

// route returns the virtual server of this node (vnodes) that claim q,
// for the URL's key, was taken from: the one q names if it is still here,
// else the first one after the key. elsewhere reports one of vnodes lying
// between the key and the claimer, when q is the chain's first claim (one
// passed on along a chain asks only what this node fetched: the claimer it
// serves may be one of our own virtual servers).
func route(q Request, key id.ID, vnodes []ring.Node) (ours ring.Node, elsewhere bool) {
	var named ring.Node
	found, isNamed := false, false
	for _, v := range vnodes {
		if q.Hops == 0 && (v.ID == key || (v.ID != q.Vnode.ID && id.InHalfOpen(v.ID, key, q.Vnode.ID))) {
			return ring.Node{}, true
		}
		if v.ID == q.To {
			named, isNamed = v, true
		}
		if !found || id.InHalfOpen(v.ID, key, ours.ID) {
			ours, found = v, true
		}
	}
	if isNamed {
		ours = named
	}
	return ours, false
}

// checkClaim returns an ErrRole error when from had no right to send q:
// a virtual server not its own, an invalid id, or a chain longer than any
// claimer asks.
func checkClaim(from ring.Node, q Request, maxVirtualServers, maxHops int) error {
	if q.Vnode.Peer != from.Peer || q.Vnode.Addr != from.Addr {
		return fmt.Errorf("%w: claim for %s sent by %s", ErrRole, q.Vnode, from.Contact)
	}
	if err := ring.CheckID(q.Vnode, maxVirtualServers); err != nil {
		return fmt.Errorf("%w: %w", ErrRole, err)
	}
	if most := maxRounds * (maxHops + 1); len(q.Chain) > most {
		return fmt.Errorf("%w: a chain of %d former owners (at most %d)", ErrRole, len(q.Chain), most)
	}
	return nil
}

// Answer answers a claim on day from the member from, whose virtual
// server took the URL's range: taken when this node fetched or is
// fetching the URL today (or its own former owner says so), else the URL
// is recorded as claimed away and the answer is "yours". A claim its
// sender had no right to make fails with ErrRole.
//
// Answer is the driver of decide: it holds the mutex only to read and
// write the day's sets, never while it calls the Transport or History.
func (c *Claims) Answer(ctx context.Context, from ring.Node, q Request, day int64) (Reply, error) {
	if err := checkClaim(from, q, c.cfg.MaxVirtualServers, c.cfg.MaxHops); err != nil {
		return Reply{}, err
	}
	key := id.OfString(q.URL)
	s := shortOf(key)
	st := answerState{self: c.cfg.Peer, maxHops: c.cfg.MaxHops, day: day}
	st.ours, st.elsewhere = route(q, key, c.cfg.Ring.Vnodes())
	if !st.elsewhere && q.Hops == 0 && q.Day == day {
		st.twin = c.twinOf(st.ours.ID, q.Vnode)
	}
	if !st.elsewhere && q.Day == day && !st.twin {
		c.mu.Lock()
		c.rollLocked(day)
		st.held = c.heldLocked(s)
		st.formers = c.claimFormersLocked(q.To, st.ours.ID, day)
		c.mu.Unlock()
	}
	for {
		a := decide(q, from, st)
		switch a.step {
		case stepAsk:
			c.sent.Add(1)
			rep, err := c.cfg.Transport.Claim(ctx, a.former, a.ask)
			st.replies = append(st.replies, chainReply{rep: rep, err: err})
			continue
		case stepHistory:
			if a.cut {
				c.cut.Add(1)
			}
			st.history = historyNotFetched
			if c.cfg.History != nil && c.cfg.History(ctx, q.URL, day) {
				st.history = historyFetched
			}
			continue
		case stepSettle:
			c.mu.Lock()
			c.rollLocked(day)
			st.held, st.settled = c.heldLocked(s), true
			a = decide(q, from, st)
			c.applyLocked(s, key, q, a)
			c.mu.Unlock()
		case stepReply:
			if a.markHad || a.markMine || a.grant {
				c.mu.Lock()
				c.rollLocked(day)
				c.applyLocked(s, key, q, a)
				c.mu.Unlock()
			}
		}
		if c.log.Enabled(ctx, slog.LevelDebug) {
			c.log.Debug("claim: answered", "url", q.URL, "hops", q.Hops, "from", q.Vnode.String(),
				"ours", st.ours.ID.Short(), "why", a.why, "taken", a.reply.Taken, "elsewhere", a.reply.Elsewhere,
				"retry", a.reply.Retry, "next", a.reply.Next != nil, "formers", len(st.formers))
		}
		return a.reply, nil
	}
}

// heldLocked returns what the day's sets say of s.
func (c *Claims) heldLocked(s short) held {
	g, gone := c.gone[s]
	_, had := c.had[s]
	return held{mine: c.mine.has(s), had: had, gone: gone, grant: g}
}

// claimFormersLocked returns the former owners of the range a claim
// names: those of the virtual server the claimer took it from (to), even
// if it has moved off its index since, and those of ours.
func (c *Claims) claimFormersLocked(to, ours id.ID, day int64) []ring.Node {
	formers := c.formersLocked(to, day)
	if ours != to {
		for _, f := range c.formersLocked(ours, day) {
			if !slices.Contains(formers, f) {
				formers = append(formers, f)
			}
		}
	}
	return formers
}

// applyLocked records the marks of a, a reply to q for the URL key (s).
func (c *Claims) applyLocked(s short, key id.ID, q Request, a action) {
	switch {
	case a.markHad:
		c.markHadLocked(s)
	case a.markMine:
		c.mine.add(s)
	case a.grant:
		c.gone[s] = awayClaim{key: key, vnode: q.Vnode, claimer: claimerOf(q)}
		c.away.Add(1)
	}
}
