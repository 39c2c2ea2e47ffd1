package search

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
	fts "github.com/herod-archive/herod/search"
)

// SyncProtocol carries posting anti-entropy between the holders of a
// term range (syncround.go): one JSON syncRequest frame, one JSON
// syncReply frame, and for a list with postings one more frame of them
// (encodeAdd's form). Ops: "sums" (the digest of up to maxSyncRanges
// ranges), "list" (a page of the postings of up to maxSyncRanges ranges
// after a cursor) and "pull" (the asker, owner of the range, asks this
// holder to pull it from the asker).
const SyncProtocol protocol.ID = "/herod/search-sync/1.0.0"

// Limits of SyncProtocol.
const (
	maxSyncRanges   = 64       // ranges a request names
	maxListPostings = 16384    // postings a list reply holds
	listBytes       = addChunk // about the encoded postings of a list reply, before compression
	syncFrame       = 16 << 10 // a JSON request or reply
)

// Operations of a syncRequest.
const (
	opSums = "sums"
	opList = "list"
	opPull = "pull"
)

// ErrSyncRole reports a sync request outside the asker's role: a pull
// request from a member that does not own the range, or for a range
// this node does not hold; a sums or list request for ranges the asker
// and this node do not both hold (checkAsk).
var ErrSyncRole = errors.New("search: sync outside the asker's role")

// KeyRange is the ring interval (From, To] of term keys; From == To is
// the whole circle.
type KeyRange struct {
	From id.ID `json:"from"`
	To   id.ID `json:"to"`
}

// Has reports whether key lies in the range.
func (r KeyRange) Has(key id.ID) bool { return id.InHalfOpen(key, r.From, r.To) }

// RangeSum is the digest of the postings of a range: how many, and the
// XOR of each one's itemHash (its identity and end).
type RangeSum struct {
	Count int64 `json:"n"`
	XOR   id.ID `json:"x"`
}

// itemHash digests what two holders of a posting must agree on: its
// identity (term, URL key, From) and its end. Counts (tf, length) are
// left out: holders that differ only there do not pull back and forth.
func itemHash(p fts.Posting) id.ID {
	b := make([]byte, 0, len(p.Term)+1+id.Size+16)
	b = append(b, p.Term...)
	b = append(b, 0)
	b = append(b, p.Key[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(p.From))
	b = binary.BigEndian.AppendUint64(b, uint64(p.To))
	return id.ID(sha1.Sum(b))
}

func (s *RangeSum) add(p fts.Posting) {
	s.Count++
	h := itemHash(p)
	for i := range s.XOR {
		s.XOR[i] ^= h[i]
	}
}

// SyncCursor is a posting's place in list order: term key, term, URL
// key, From. A list answers the postings after a cursor.
type SyncCursor struct {
	TermKey id.ID  `json:"k"`
	Term    string `json:"t"`
	Key     id.ID  `json:"u"`
	From    int64  `json:"f"`
}

func cursorOf(p fts.Posting) SyncCursor {
	return SyncCursor{TermKey: fts.TermKey(p.Term), Term: p.Term, Key: p.Key, From: p.From}
}

func (a SyncCursor) cmp(b SyncCursor) int {
	if c := a.TermKey.Cmp(b.TermKey); c != 0 {
		return c
	}
	if c := strings.Compare(a.Term, b.Term); c != 0 {
		return c
	}
	if c := a.Key.Cmp(b.Key); c != 0 {
		return c
	}
	return cmp.Compare(a.From, b.From)
}

type syncRequest struct {
	Op     string      `json:"op"`
	Ranges []KeyRange  `json:"ranges"`
	After  *SyncCursor `json:"after,omitempty"` // list: postings after this one
	Limit  int         `json:"limit,omitempty"` // list: at most this many
}

type syncReply struct {
	Error    string      `json:"error,omitempty"`
	Sums     []RangeSum  `json:"sums,omitempty"`
	Postings int         `json:"postings,omitempty"` // list: postings in the next frame
	Next     *SyncCursor `json:"next,omitempty"`     // list: more may follow this one
}

// syncState is a Service's sync counters and queue of pull requests.
type syncState struct {
	synced     atomic.Int64 // postings pulled by sync and stored
	refusedIn  atomic.Int64 // postings a peer sent by sync that were refused
	syncBytes  atomic.Int64 // sync bytes this node sent and received as the asker
	inSync     atomic.Int64 // range pairs found equal by one sums request
	syncErrs   atomic.Int64 // range pairs whose sync failed
	syncServed atomic.Int64 // sync requests answered
	pulls      atomic.Int64 // pull requests queued or being served
	rounds     atomic.Int64 // rounds RunSync ran
	scans      atomic.Int64 // scans of the store for digests (rangeSums)
	askMu      sync.Mutex
	askCache   map[id.ID]askEntry // checkAsk's holders, by owner virtual server
	lastPut    atomic.Int64       // Unix ns: postings last stored by an add or this node's delivery (0: never)
	quiet      time.Duration      // SyncQuiet unless set (tests)
	maxDefer   time.Duration      // SyncMaxDefer unless set (tests)

	roundMu  sync.Mutex
	jobsOnce sync.Once
	jobs     chan pullJob
	jobMu    sync.Mutex
	pending  map[pullJob]bool
}

// SyncSpec declares SyncProtocol to the node's kit.
func (sv *Service) SyncSpec() kit.Spec {
	return kit.Spec{ID: SyncProtocol, Handle: sv.serveSync, MaxFrame: syncFrame,
		MaxRequest: syncFrame + 16, MaxActive: 8}
}

// serveSync answers one sync request of a member.
func (sv *Service) serveSync(ctx context.Context, q *kit.Request) error {
	var req syncRequest
	if err := q.ReadJSON(syncFrame, &req); err != nil {
		return err
	}
	if len(req.Ranges) == 0 || len(req.Ranges) > maxSyncRanges {
		return fmt.Errorf("%w: %d ranges", kit.ErrBadFrame, len(req.Ranges))
	}
	sv.syncServed.Add(1)
	if req.Op == opSums || req.Op == opList {
		if err := sv.checkAsk(ctx, q.Member, req.Ranges); err != nil {
			q.Refuse(err)
			return q.Reply(syncReply{Error: err.Error()})
		}
	}
	switch req.Op {
	case opSums:
		sums, err := sv.rangeSums(ctx, req.Ranges)
		if err != nil {
			return q.Reply(syncReply{Error: err.Error()})
		}
		return q.Reply(syncReply{Sums: sums})
	case opList:
		ps, next, err := sv.listRanges(ctx, req.Ranges, req.After, min(max(req.Limit, 1), maxListPostings))
		if err != nil {
			return q.Reply(syncReply{Error: err.Error()})
		}
		if len(ps) == 0 {
			return q.Reply(syncReply{})
		}
		if err := q.Reply(syncReply{Postings: len(ps), Next: next}); err != nil {
			return err
		}
		return wire.WriteFrame(q.Stream(), encodeAdd(ps))
	case opPull:
		if len(req.Ranges) != 1 {
			return fmt.Errorf("%w: pull of %d ranges", kit.ErrBadFrame, len(req.Ranges))
		}
		if err := sv.checkPull(ctx, q.Member, req.Ranges[0]); err != nil {
			q.Refuse(err)
			return q.Reply(syncReply{Error: err.Error()})
		}
		sv.queuePull(pullJob{r: req.Ranges[0], c: q.Member.Contact})
		return q.Reply(syncReply{})
	default:
		return fmt.Errorf("%w: sync op %q", kit.ErrBadFrame, req.Op)
	}
}

// rangeSums returns the digest of the postings of each of rs. A digest
// is a scan of the store; the digests of the ranges asked since the
// store last wrote are kept (sumCache), so a ring whose holders are in
// sync and store nothing scans once, not every round and every
// holder's request.
func (sv *Service) rangeSums(ctx context.Context, rs []KeyRange) ([]RangeSum, error) {
	key := rangesKey(rs)
	writes := sv.Store.Writes()
	if out, ok := sv.sums.get(key, writes); ok {
		return out, nil
	}
	out := make([]RangeSum, len(rs))
	sv.scans.Add(1)
	err := sv.scan(ctx, rs, func(i int, p fts.Posting) { out[i].add(p) })
	if err != nil {
		return nil, fmt.Errorf("search sync: sums: %w", err)
	}
	sv.sums.put(key, writes, out)
	return slices.Clone(out), nil
}

// maxCachedSums bounds the digests sumCache keeps: a round's own and
// its holders' requests, a few per virtual server.
const maxCachedSums = 256

// sumCache keeps the digests of ranges read since the store's write
// count was writes; a later count empties it.
type sumCache struct {
	mu     sync.Mutex
	writes uint64
	sums   map[string][]RangeSum
}

func (c *sumCache) get(key string, writes uint64) ([]RangeSum, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writes != writes {
		return nil, false
	}
	out, ok := c.sums[key]
	return slices.Clone(out), ok
}

func (c *sumCache) put(key string, writes uint64, sums []RangeSum) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if writes < c.writes {
		return // read before a write the cache has seen
	}
	if c.writes != writes || c.sums == nil || len(c.sums) >= maxCachedSums {
		c.writes, c.sums = writes, map[string][]RangeSum{}
	}
	c.sums[key] = slices.Clone(sums)
}

// rangesKey names a list of ranges.
func rangesKey(rs []KeyRange) string {
	b := make([]byte, 0, len(rs)*2*id.Size)
	for _, r := range rs {
		b = append(b, r.From[:]...)
		b = append(b, r.To[:]...)
	}
	return string(b)
}

// listRanges returns the first limit postings of rs after the cursor, in
// cursor order, cut at about listBytes, and the cursor to go on from when
// there may be more.
func (sv *Service) listRanges(ctx context.Context, rs []KeyRange, after *SyncCursor, limit int) ([]fts.Posting, *SyncCursor, error) {
	type item struct {
		c SyncCursor
		p fts.Posting
	}
	var items []item
	var bound *SyncCursor // past the page: the last of a full trimmed page
	trim := func() {
		slices.SortFunc(items, func(a, b item) int { return a.c.cmp(b.c) })
		if len(items) >= limit {
			items = items[:limit]
			bound = &items[limit-1].c
		}
	}
	err := sv.scan(ctx, rs, func(_ int, p fts.Posting) {
		c := cursorOf(p)
		if after != nil && c.cmp(*after) <= 0 {
			return
		}
		if bound != nil && c.cmp(*bound) >= 0 {
			return
		}
		if items = append(items, item{c, p}); len(items) >= 2*limit {
			trim()
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("search sync: list: %w", err)
	}
	trim()
	full := len(items) == limit
	ps := make([]fts.Posting, 0, len(items))
	size := 0
	for _, it := range items {
		if size >= listBytes {
			full = true // the rest waits for the next page
			break
		}
		size += len(it.p.URL) + len(it.p.Term) + 48
		ps = append(ps, it.p)
	}
	if !full {
		return ps, nil, nil
	}
	next := cursorOf(ps[len(ps)-1])
	return ps, &next, nil
}

// checkPull checks a member's request that this node pull r from it: r
// must lie in a range the member's virtual server r.To owns, and this
// node must be one of that range's holders.
func (sv *Service) checkPull(ctx context.Context, m ring.Node, r KeyRange) error {
	o, err := sv.Ring.Lookup(ctx, r.To)
	if err != nil {
		return fmt.Errorf("search sync: check pull: %w", err)
	}
	if o.ID != r.To || o.Peer != m.Peer {
		return fmt.Errorf("%w: %s does not own key %s", ErrSyncRole, m.Addr, r.To.Short())
	}
	// The key after From is r.To's too: so r lies in r.To's range (and
	// the whole circle, From == To, only when r.To is alone on it).
	start, err := sv.Ring.Lookup(ctx, r.From.AddPow2(0))
	if err != nil {
		return fmt.Errorf("search sync: check pull: %w", err)
	}
	if start.ID != r.To {
		return fmt.Errorf("%w: (%s, %s] is not one virtual server's range", ErrSyncRole, r.From.Short(), r.To.Short())
	}
	if !slices.ContainsFunc(sv.holders(ctx, o), func(c ring.Contact) bool { return c.Peer == sv.Self.Peer }) {
		return fmt.Errorf("%w: this node does not hold (%s, %s]", ErrSyncRole, r.From.Short(), r.To.Short())
	}
	return nil
}

// checkAsk checks the ranges of member m's sums or list request: in
// ring order, within one virtual server's range (a round's range or its
// parts: the span from the first's start to the last's end passes no
// virtual server), and m and this node both among that range's holders.
// So a member asks for the digests and postings of what it holds with
// this node, never a scan of the whole store.
func (sv *Service) checkAsk(ctx context.Context, m ring.Node, rs []KeyRange) error {
	first, last := rs[0], rs[len(rs)-1]
	if first.From == first.To || !inOrder(rs) {
		return fmt.Errorf("%w: %d ranges not in ring order within one range", ErrSyncRole, len(rs))
	}
	o, err := sv.Ring.Lookup(ctx, first.From.AddPow2(0))
	if err != nil {
		return fmt.Errorf("search sync: check ranges: %w", err)
	}
	if !id.InHalfOpen(last.To, first.From, o.ID) {
		return fmt.Errorf("%w: (%s, %s] is not within one virtual server's range", ErrSyncRole, first.From.Short(), last.To.Short())
	}
	hs := sv.askHolders(ctx, o)
	for _, p := range []string{m.Peer, sv.Self.Peer} {
		if !slices.ContainsFunc(hs, func(c ring.Contact) bool { return c.Peer == p }) {
			return fmt.Errorf("%w: %s does not hold (%s, %s]", ErrSyncRole, p, first.From.Short(), last.To.Short())
		}
	}
	return nil
}

// askHoldersTTL is how long checkAsk trusts the holders it found of a
// virtual server's range: a round's requests (a range, then its parts)
// and the rounds of the next half minute ask no more of the ring.
const askHoldersTTL = 30 * time.Second

// askHolders is holders(o) for checkAsk, kept askHoldersTTL (at most
// maxAskHolders virtual servers; a full table starts again).
func (sv *Service) askHolders(ctx context.Context, o ring.Node) []ring.Contact {
	now := time.Now()
	sv.askMu.Lock()
	if e, ok := sv.askCache[o.ID]; ok && now.Sub(e.at) < askHoldersTTL && e.owner == o.Peer {
		sv.askMu.Unlock()
		return e.hs
	}
	sv.askMu.Unlock()
	hs := sv.holders(ctx, o)
	sv.askMu.Lock()
	if sv.askCache == nil || len(sv.askCache) >= maxAskHolders {
		sv.askCache = map[id.ID]askEntry{}
	}
	sv.askCache[o.ID] = askEntry{owner: o.Peer, hs: hs, at: now}
	sv.askMu.Unlock()
	return hs
}

// maxAskHolders bounds askHolders' table: the virtual servers of a ring.
const maxAskHolders = 4096

type askEntry struct {
	owner string
	hs    []ring.Contact
	at    time.Time
}

// syncCall sends one sync request to the real node behind c and reads
// its reply and, for a list with postings, the postings (checked by
// decodeAdd). Bytes both ways are counted.
func (sv *Service) syncCall(ctx context.Context, c ring.Contact, req syncRequest) (syncReply, []fts.Posting, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return syncReply{}, nil, fmt.Errorf("search sync: %w", err)
	}
	s, err := sv.Open(ctx, c, SyncProtocol)
	if err != nil {
		return syncReply{}, nil, fmt.Errorf("search sync %s to %s: %w", req.Op, c.Addr, err)
	}
	defer s.Close()
	fail := func(err error) (syncReply, []fts.Posting, error) {
		s.Reset()
		return syncReply{}, nil, fmt.Errorf("search sync %s to %s: %w", req.Op, c.Addr, err)
	}
	if err := wire.WriteFrame(s, b); err != nil {
		return fail(err)
	}
	sv.syncBytes.Add(int64(len(b)) + 2)
	_ = s.CloseWrite()
	br := bufio.NewReader(s)
	rb, err := wire.ReadFrame(br, syncFrame)
	if err != nil {
		return fail(err)
	}
	sv.syncBytes.Add(int64(len(rb)) + 2)
	var rep syncReply
	if err := json.Unmarshal(rb, &rep); err != nil {
		return fail(err)
	}
	if rep.Error != "" {
		return syncReply{}, nil, fmt.Errorf("%w: %s: %s", errRemote, c.Addr, rep.Error)
	}
	if rep.Postings == 0 {
		return rep, nil, nil
	}
	if req.Op != opList || rep.Postings < 0 || rep.Postings > req.Limit {
		return fail(fmt.Errorf("%d postings sent, %d asked", rep.Postings, req.Limit))
	}
	pb, err := wire.ReadFrame(br, maxAddBytes)
	if err != nil {
		return fail(err)
	}
	sv.syncBytes.Add(int64(len(pb)) + 4)
	ps, err := decodeAdd(pb, rep.Postings)
	if err != nil {
		sv.refusedIn.Add(int64(rep.Postings))
		return fail(err)
	}
	return rep, ps, nil
}

// split cuts r into n parts of equal width (fewer when r is narrower).
func split(r KeyRange, n int) []KeyRange {
	width := id.Distance(r.From, r.To)
	if r.From == r.To {
		width = new(big.Int).Lsh(big.NewInt(1), id.Bits)
	}
	step := new(big.Int).Div(width, big.NewInt(int64(n)))
	if step.Sign() == 0 {
		return []KeyRange{r}
	}
	base := new(big.Int).SetBytes(r.From[:])
	out := make([]KeyRange, 0, n)
	from := r.From
	for i := 1; i < n; i++ {
		to := id.FromBig(new(big.Int).Add(base, new(big.Int).Mul(step, big.NewInt(int64(i)))))
		out = append(out, KeyRange{from, to})
		from = to
	}
	return append(out, KeyRange{from, r.To})
}
