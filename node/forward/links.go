package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// MaxHops bounds how often a batch of links is passed on by nodes that do
// not own them (while the ring is still settling) before the last
// recipient keeps them anyway rather than lose them.
const MaxHops = 4

// MaxPassingOn bounds the links other nodes passed to this one that wait
// here to be passed on (Forwarder.PassingOn): past it a batch that would
// add more is refused (ErrBusy) and stays with its sender, which tries
// again; links a member sends this node, not their owner, cannot so fill
// its memory and outbox.
const MaxPassingOn = 200_000

// MaxOverHopsPerDay bounds the links one member may have this node queue
// though it does not own them, by saying they were passed on MaxHops
// times (a token bucket refilled over a day): honest walks get there only
// while views of the ring disagree.
const MaxOverHopsPerDay = 10_000

// ErrBusy refuses a batch this node would have to pass on while
// MaxPassingOn links already wait to be.
var ErrBusy = errors.New("node: too many links waiting to be passed on")

// streamTimeout bounds one exchange of the links protocol, as for the
// node's other protocols.
const streamTimeout = 30 * time.Second

// maxActive bounds the links requests a node serves at once (each may
// hold an 8 MiB batch and its URLs); more wait for a slot (kit.Spec).
const maxActive = 16

// maxIdle bounds the links session streams waiting here between
// batches, all members together: half the protocol's stream limit
// (node/limits.go), where the kit's default, half of maxActive, would
// close the streams of a ring of more than one or two members.
const maxIdle = 64

// DefaultKnownPerDay is Links.KnownPerDay when zero: known URLs one
// sender may have a node remember in a day. A node shares, once a day,
// the URLs it knows of that no version carries; half a million is far
// above what one member's share of a range holds.
const DefaultKnownPerDay = 500_000

// maxKnownGroups bounds the successor walks that check one batch of
// known URLs (Links.heldKnown).
const maxKnownGroups = 8

// ErrRole is the refusal of a member's request outside the role the ring
// gives it (replica links for a range this node does not replicate, known
// URLs for a range it does not hold).
var ErrRole = errors.New("node: outside the sender's role")

// errRemote reports an error the remote node returned.
var errRemote = errors.New("node: remote error")

// LinksRing is what Links needs of the ring; *ring.Ring implements it.
type LinksRing interface {
	// SuccessorsOf returns local virtual server index and its successor
	// list, if it runs here.
	SuccessorsOf(index int) (ring.Node, []ring.Node, bool)
	// CloserOwner returns an owner of key closer than this node's routing
	// knows, if a local virtual server's view has one.
	CloserOwner(key id.ID) (ring.Node, bool)
	Successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error)
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
}

// Crawler is what Links hands received links to; *crawl.Crawler
// implements it.
type Crawler interface {
	Add(ctx context.Context, urls []string) error
	AddRequisites(ctx context.Context, urls []string) error
	// Remember keeps known URLs without crawling them.
	Remember(ctx context.Context, urls []string) error
}

// Links is a node's side of the links protocol: it sends the forwarder's
// batches (Deliver) and known URLs (ShareKnown), and receives other
// nodes' (Serve): it queues at the crawler the links this node owns and
// passes the rest on through the forwarder. Every field but KnownPerDay,
// Now and Logger must be set before it sends or receives; Crawler may be
// set after the forwarder is built.
type Links struct {
	Forwarder *Forwarder
	Crawler   Crawler
	Ring      LinksRing
	Owns      func(url string) bool // whether this node owns the canonical url
	Self      string                // this node's peer id
	// LinkReplicas is how many real nodes crawl each link (the owner and
	// its next LinkReplicas-1); Replicas is k, the real nodes that hold
	// a range's versions.
	LinkReplicas, Replicas int
	// Exchange sends one request of the links protocol, a session
	// protocol (Spec), and reads its reply: the node's kit.Pool.Exchange,
	// so a node's batches to one member share a stream it keeps
	// (kit.OpenExchanger opens a stream each).
	Exchange kit.Exchanger
	// KnownPerDay bounds the known URLs this node remembers from one
	// sender in a day (a token bucket refilled over 24 hours); zero means
	// DefaultKnownPerDay.
	KnownPerDay int
	// Now tells the time for KnownPerDay; nil means time.Now.
	Now        func() time.Time
	wire.Hooks // Logger, optional

	known       knownBuckets
	rf          reforwards // spans to re-forward (reforward.go)
	rfStats     struct{ announced, spans, links, dropped, refused, failed atomic.Int64 }
	verifyRetry time.Duration // verifyRetry when zero (tests shorten it)

	linksReceived, badLinks, overHops, knownShared, knownReceived, passOnRefused, overHopDropped atomic.Int64
	overHop                                                                                      knownBuckets // over-hop links a sender may have queued here (MaxOverHopsPerDay)
	knownRefused, knownOverCap                                                                   atomic.Int64
}

// LinksStats counts the links other nodes sent to this one.
type LinksStats struct {
	Received       int64 // links received and queued or passed on
	BadLinks       int64 // not canonical: dropped
	OverHops       int64 // queued here at MaxHops though not owned
	KnownShared    int64 // known URLs sent to their ranges' holders
	KnownReceived  int64 // known URLs remembered from others
	KnownRefused   int64 // known URLs refused: of ranges this node does not hold
	KnownOverCap   int64 // known URLs refused: over their sender's KnownPerDay
	PassOnRefused  int64 // batches refused: MaxPassingOn links waited to be passed on
	OverHopDropped int64 // links at MaxHops dropped: over their sender's MaxOverHopsPerDay
}

// Stats returns a snapshot of the counters.
func (l *Links) Stats() LinksStats {
	return LinksStats{Received: l.linksReceived.Load(), BadLinks: l.badLinks.Load(), OverHops: l.overHops.Load(),
		KnownShared: l.knownShared.Load(), KnownReceived: l.knownReceived.Load(),
		KnownRefused: l.knownRefused.Load(), KnownOverCap: l.knownOverCap.Load(), PassOnRefused: l.passOnRefused.Load(),
		OverHopDropped: l.overHopDropped.Load()}
}

// Deliver hands a batch to the virtual server to and returns to's
// successors: locally when to is one of this node's virtual servers,
// otherwise over the links protocol. It is the forwarder's
// Config.Deliver.
func (l *Links) Deliver(ctx context.Context, to ring.Node, b Batch) ([]ring.Node, error) {
	if l.Log().Enabled(ctx, slog.LevelDebug) {
		for _, u := range b.URLs {
			l.Log().Debug("links: sending", "url", u, "to", to.String(), "hops", b.Hops)
		}
	}
	if to.Peer == l.Self {
		if err := l.receiveKind(ctx, b.URLs, b.Hops, b.Replica, b.Requisites); err != nil {
			return nil, err
		}
		return l.replySuccessorsOf(to.Index, b.Want, b.Next), nil
	}
	hdr := Header{VS: to.Index, Hops: b.Hops, Replica: b.Replica, Req: b.Requisites, N: len(b.URLs), Want: b.Want, Next: b.Next}
	rep, err := l.send(ctx, to.Contact, hdr, b.URLs)
	if err != nil {
		return nil, fmt.Errorf("send links: %w", err)
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("send links: %w: %s", errRemote, rep.Error)
	}
	return rep.Successors, nil
}

// Spec declares the links protocol to the node's kit: Serve behind the
// trust gate, a request of a header and one compressed batch.
func (l *Links) Spec() kit.Spec {
	return kit.Spec{ID: Protocol, Handle: l.Serve, MaxFrame: MaxBody, MaxRequest: MaxHeader + MaxBody + 20,
		Deadline: streamTimeout, MaxActive: maxActive, MaxIdle: maxIdle, Session: true}
}

// Serve receives one hop of another node's ring walk, or a batch of
// known URLs: the handler of Protocol (Spec), run by the node's kit.
func (l *Links) Serve(ctx context.Context, q *kit.Request) error {
	var hdr Header
	if err := q.ReadJSON(MaxHeader, &hdr); err != nil {
		return err
	}
	body, err := q.ReadFrame(MaxBody)
	if err != nil {
		return err
	}
	urls, err := DecodeLinks(body, hdr.N)
	if err != nil {
		return fmt.Errorf("%w: %w", kit.ErrBadFrame, err)
	}
	rep := Reply{Accepted: len(urls)}
	if hdr.Reforward != nil {
		// Any member may announce a take-over: the span is re-forwarded
		// once this node's ring gives the announcer all of it
		// (verifySpan), at most maxSpansPerPeer spans a day from one
		// member (queueReforward).
		l.queueReforward(q.Member.Peer, *hdr.Reforward)
		return q.Reply(Reply{})
	}
	if hdr.Known {
		n, err := l.rememberKnown(ctx, q.Member.Peer, urls)
		rep.Accepted = n
		if err != nil {
			if errors.Is(err, ErrRole) {
				q.Refuse(err)
			}
			rep.Error = err.Error()
		}
		return q.Reply(rep)
	}
	if hdr.Replica {
		if err := l.replicaRole(ctx, urls); err != nil {
			if errors.Is(err, ErrRole) {
				q.Refuse(err)
			}
			return q.Reply(Reply{Error: err.Error()})
		}
	}
	from := q.Member.Peer
	overHop := func() bool { return l.overHop.take(from, 1, MaxOverHopsPerDay, l.now()) == 1 }
	if err := l.receiveKindFrom(ctx, urls, hdr.Hops, hdr.Replica, hdr.Req, overHop); err != nil {
		rep = Reply{Error: err.Error()}
	} else {
		l.linksReceived.Add(int64(len(urls)))
		rep.Successors = l.replySuccessorsOf(hdr.VS, hdr.Want, hdr.Next)
	}
	return q.Reply(rep)
}

// replySuccessorsOf returns the successors the sender of a batch to the
// local virtual server index asked for (Batch.Want).
func (l *Links) replySuccessorsOf(index, want int, next id.ID) []ring.Node {
	if want == WantNone {
		return nil // most batches: no need for the ring's status
	}
	if v, succs, ok := l.Ring.SuccessorsOf(index); ok {
		return PickSuccessors(v.ID, succs, want, next)
	}
	return nil
}

// Receive takes links delivered to this node: it re-checks each URL,
// queues those this node owns and passes the rest on. Replica links are
// queued as they are: they belong to a predecessor's range. After MaxHops
// passes links are queued here rather than risk losing them.
func (l *Links) Receive(ctx context.Context, urls []string, hops int, replica bool) error {
	return l.receiveKind(ctx, urls, hops, replica, false)
}

// receiveKind is Receive for links (req false) or page requisites (req
// true), which are passed on as requisites and queued with
// crawl.Crawler.AddRequisites.
func (l *Links) receiveKind(ctx context.Context, urls []string, hops int, replica, req bool) error {
	return l.receiveKindFrom(ctx, urls, hops, replica, req, nil)
}

// receiveKindFrom is receiveKind for a batch another member sent: the
// hop count is the sender's word, so a link it says was passed on
// MaxHops times is queued here, not owned, only while overHop (the
// sender's allowance, MaxOverHopsPerDay) says yes; past it the link is
// dropped and counted. overHop nil: no allowance.
func (l *Links) receiveKindFrom(ctx context.Context, urls []string, hops int, replica, req bool, overHop func() bool) error {
	var mine, others []string
	closer := map[ring.Node][]string{}
	debug := l.Log().Enabled(ctx, slog.LevelDebug)
	for _, u := range urls {
		c, err := canon.Canonical(u)
		if err != nil || c != u {
			l.badLinks.Add(1)
			continue
		}
		if debug {
			l.Log().Debug("links: received", "url", c, "hops", hops, "owned", l.Owns(c))
		}
		switch {
		case replica || l.Owns(c):
			mine = append(mine, c)
		case hops >= MaxHops && overHop != nil && !overHop():
			l.overHopDropped.Add(1)
		case hops >= MaxHops:
			mine = append(mine, c)
			if l.overHops.Add(1) == 1 {
				l.Log().Info("a link passed on too often is queued here though this node does not own it; ring views disagree",
					"url", c, "hops", hops)
			}
		default:
			// A lookup led here, so this node's successor-side view is what
			// the sender's routing lacks: a predecessor between the key and
			// the local virtual server is a closer owner (it may have just
			// joined); a walk from here could lead straight back.
			if p, ok := l.Ring.CloserOwner(id.OfString(c)); ok {
				closer[p] = append(closer[p], c)
			} else {
				others = append(others, c)
			}
		}
	}
	if len(others) > 0 || len(closer) > 0 {
		if waiting := l.Forwarder.PassingOn(); waiting >= MaxPassingOn {
			l.passOnRefused.Add(1)
			return fmt.Errorf("%w: %d", ErrBusy, waiting)
		}
	}
	for p, us := range closer {
		if err := l.Forwarder.Enqueue(us, hops+1, &p, req); err != nil {
			return err
		}
	}
	if err := l.Forwarder.Enqueue(others, hops+1, nil, req); err != nil {
		return err
	}
	if req {
		return l.Crawler.AddRequisites(ctx, mine)
	}
	return l.Crawler.Add(ctx, mine)
}

// replicaRole checks a batch of replica links: this node takes links as a
// replica (LinkReplicas > 1) only for keys whose owner's range it
// replicates, i.e. it is one of the next LinkReplicas-1 distinct real
// nodes after the owner, and every key of the batch lies in that one
// owner's range (a walk hands a replica one owner's run at a time). Two
// ring look-ups per batch: the owner (and its successors) of one key, and
// the owner of the key farthest before it. An error that does not wrap
// ErrRole means the ring could not tell.
func (l *Links) replicaRole(ctx context.Context, urls []string) error {
	if l.LinkReplicas <= 1 {
		return fmt.Errorf("%w: this node takes no replica links (LinkReplicas 1)", ErrRole)
	}
	if len(urls) == 0 {
		return nil
	}
	succs, err := l.Ring.Successors(ctx, id.OfString(urls[0]), l.LinkReplicas)
	if err != nil {
		return fmt.Errorf("replica links: %w", err)
	}
	owner := succs[0]
	mine := false
	for _, s := range succs[1:] {
		mine = mine || s.Peer == l.Self
	}
	if !mine {
		return fmt.Errorf("%w: replica links for %s's range, which this node does not replicate", ErrRole, owner)
	}
	far, farDist := id.ID{}, new(big.Int)
	o := new(big.Int).SetBytes(owner.ID[:])
	circle := new(big.Int).Lsh(big.NewInt(1), id.Bits)
	for _, u := range urls {
		k := id.OfString(u)
		d := new(big.Int).Sub(o, new(big.Int).SetBytes(k[:]))
		d.Mod(d, circle)
		if d.Cmp(farDist) > 0 {
			far, farDist = k, d
		}
	}
	if farDist.Sign() == 0 {
		return nil // every key is the owner's own id
	}
	got, err := l.Ring.Lookup(ctx, far)
	if err != nil {
		return fmt.Errorf("replica links: %w", err)
	}
	if got.ID != owner.ID {
		return fmt.Errorf("%w: replica links span the ranges of %s and %s", ErrRole, owner, got)
	}
	return nil
}

// keyed is a URL with its ring key.
type keyed struct {
	key id.ID
	url string
}

// ShareKnown implements crawl.KnownSharer (it is the forwarder's
// Config.ShareKnown): it sends each URL to the real nodes that hold its
// range — its owner and the owner's next k-1 (Replicas) distinct real
// nodes — other than this one, to be
// remembered there (the links protocol with Known set). URLs are grouped
// by owner: one ring look-up and one successor walk per owner, one message
// per holder. A holder that refuses or cannot be reached is sent nothing
// more in this call, and the others still get their groups: the error is
// then a *ShareError naming the URLs that missed a holder, to be shared
// again (a holder whose view of the ring still differs, one that is down
// until the ring replaces it). A failed ring look-up fails the URLs not
// yet sent.
func (l *Links) ShareKnown(ctx context.Context, urls []string) error {
	ks := make([]keyed, len(urls))
	for i, u := range urls {
		ks[i] = keyed{id.OfString(u), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return a.key.Cmp(b.key) })
	failedAt := map[string]error{} // holders that failed in this call
	se := &ShareError{}
	for len(ks) > 0 {
		if err := ctx.Err(); err != nil {
			return se.add(err, ks)
		}
		holders, err := l.Ring.Successors(ctx, ks[0].key, l.Replicas)
		if err != nil {
			return se.add(fmt.Errorf("share known: %w", err), ks)
		}
		// The owner's range ends at its id: the run of keys up to it is
		// one group (keys sorted clockwise from the first).
		first, owner := ks[0].key, holders[0]
		end := 1
		for end < len(ks) && id.InHalfOpen(ks[end].key, prevKey(first), owner.ID) {
			end++
		}
		group := make([]string, end)
		for i := range group {
			group[i] = ks[i].url
		}
		missed := false
		for _, h := range holders {
			if h.Peer == l.Self {
				continue
			}
			err, failed := failedAt[h.Peer]
			if !failed {
				if err = l.sendKnown(ctx, h, group); err != nil {
					err = fmt.Errorf("share known with %s: %w", h.Addr, err)
					failedAt[h.Peer] = err
				}
			}
			if err != nil {
				if !missed {
					se.add(err, ks[:end])
					missed = true
				}
				continue
			}
			l.knownShared.Add(int64(len(group)))
		}
		ks = ks[end:]
	}
	if len(se.Failed) > 0 {
		return se
	}
	return nil
}

// ShareError is ShareKnown's error when some URLs did not reach every
// holder of their range.
type ShareError struct {
	// Failed lists the URLs to share again, each once.
	Failed []string
	// Err is the first failure.
	Err error
}

func (e *ShareError) Error() string {
	return fmt.Sprintf("%d known URLs not shared with every holder: %v", len(e.Failed), e.Err)
}

func (e *ShareError) Unwrap() error { return e.Err }

// FailedURLs returns Failed: the replicator shares those again.
func (e *ShareError) FailedURLs() []string { return e.Failed }

// add records err (if it is the first) and ks as failed, and returns e.
func (e *ShareError) add(err error, ks []keyed) *ShareError {
	if e.Err == nil {
		e.Err = err
	}
	for _, k := range ks {
		e.Failed = append(e.Failed, k.url)
	}
	return e
}

// prevKey returns the key just before x on the circle.
func prevKey(x id.ID) id.ID {
	for i := len(x) - 1; i >= 0; i-- {
		x[i]--
		if x[i] != 0xff {
			break
		}
	}
	return x
}

// sendKnown sends one group of known URLs to holder h.
func (l *Links) sendKnown(ctx context.Context, h ring.Node, urls []string) error {
	return l.sendBatch(ctx, h, Header{VS: h.Index, Known: true, N: len(urls), Want: WantNone}, urls)
}

// sendBatch sends one links-protocol request to n, hdr then urls as one
// frame, and waits for its reply, which wants nothing back.
func (l *Links) sendBatch(ctx context.Context, n ring.Node, hdr Header, urls []string) error {
	rep, err := l.send(ctx, n.Contact, hdr, urls)
	if err != nil {
		return err
	}
	if rep.Error != "" {
		return fmt.Errorf("%w: %s", errRemote, rep.Error)
	}
	return nil
}

// send is one exchange of the links protocol with c's node: hdr, then
// urls as one frame; the reply.
func (l *Links) send(ctx context.Context, c ring.Contact, hdr Header, urls []string) (Reply, error) {
	var rep Reply
	err := l.Exchange(ctx, c, Protocol, func(s network.Stream, r *bufio.Reader) error {
		if err := wire.WriteJSON(s, hdr); err != nil {
			return err
		}
		if err := wire.WriteFrame(s, EncodeLinks(urls)); err != nil {
			return err
		}
		if err := wire.ReadJSON(r, MaxReply, &rep); err != nil {
			return fmt.Errorf("reply: %w", err)
		}
		return nil
	})
	return rep, err
}

// rememberKnown takes a batch of known URLs from member from: it
// remembers those whose range this node holds — it owns them or is one
// of the next k-1 (Replicas) distinct real nodes after their owner, as
// the sender decides (ShareKnown) — URL by URL, within the sender's
// daily allowance (KnownPerDay), and returns how many it remembered. It
// returns an error wrapping ErrRole if it refused some for their range.
func (l *Links) rememberKnown(ctx context.Context, from string, urls []string) (int, error) {
	if len(urls) == 0 {
		return 0, nil
	}
	held, err := l.heldKnown(ctx, urls)
	if err != nil {
		return 0, err
	}
	refused := len(urls) - len(held)
	n := l.known.take(from, len(held), l.knownPerDay(), l.now())
	over := len(held) - n
	held = held[:n]
	if n > 0 {
		if err := l.Crawler.Remember(ctx, held); err != nil {
			return 0, err
		}
	}
	l.knownReceived.Add(int64(n))
	l.knownRefused.Add(int64(refused))
	l.knownOverCap.Add(int64(over))
	switch {
	case refused > 0:
		return n, fmt.Errorf("%w: %d of %d known URLs for ranges this node does not hold", ErrRole, refused, len(urls))
	case over > 0:
		return n, fmt.Errorf("known links: %d URLs over the sender's allowance of %d a day", over, l.knownPerDay())
	}
	return n, nil
}

// heldKnown returns the URLs of urls whose range this node holds. It
// groups them by owner as ShareKnown does, one successor walk per group,
// at most maxKnownGroups walks: an honest batch is one owner's group
// (two while views of the ring differ), and the URLs past the last walk
// are refused unchecked.
func (l *Links) heldKnown(ctx context.Context, urls []string) ([]string, error) {
	// Keys and an order of indexes rather than keyed pairs: 24 bytes a
	// URL instead of 40, for batches of up to 500,000.
	keys := make([]id.ID, len(urls))
	order := make([]int32, len(urls))
	for i, u := range urls {
		keys[i], order[i] = id.OfString(u), int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return keys[a].Cmp(keys[b]) })
	var held []string
	for walks := 0; len(order) > 0 && walks < maxKnownGroups; walks++ {
		first := keys[order[0]]
		holders, err := l.Ring.Successors(ctx, first, l.Replicas)
		if err != nil {
			return nil, fmt.Errorf("known links: %w", err)
		}
		owner := holders[0]
		end := 1
		for end < len(order) && id.InHalfOpen(keys[order[end]], prevKey(first), owner.ID) {
			end++
		}
		if slices.ContainsFunc(holders, func(h ring.Node) bool { return h.Peer == l.Self }) {
			for _, i := range order[:end] {
				held = append(held, urls[i])
			}
		}
		order = order[end:]
	}
	return held, nil
}

func (l *Links) knownPerDay() int {
	if l.KnownPerDay > 0 {
		return l.KnownPerDay
	}
	return DefaultKnownPerDay
}

func (l *Links) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}
