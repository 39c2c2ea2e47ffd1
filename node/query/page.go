package query

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/export"
	"github.com/herod-archive/herod/ring"
)

// The CDX API's pages, ring-wide (op "page" of Protocol): the asking
// node sends every real node the query, the resume key and the page size
// N; each answers with its first N captures after the key in CDX order
// and whether it has more; the asker merges them, drops replicas and
// keeps the first N. The global first N are among the members' first N,
// so a page is exact, and paging with the last key returns every capture
// once. A member scans all its captures of the query for each page
// (memory O(N)): the cost of a page is the number of matches, not N.

// pageRequest is the op-"page" part of a Request.
type pageRequest struct {
	Domain  string   `json:"domain,omitempty"` // matchType=domain (Query is then empty)
	After   *cdx.Key `json:"after,omitempty"`
	Reverse bool     `json:"reverse,omitempty"`
	N       int      `json:"n"`
	Peers   bool     `json:"peers,omitempty"`
}

// pageBatch is one reply frame of op "page".
type pageBatch struct {
	Rows []cdx.Row `json:"rows,omitempty"`
	// Proofs holds, for each of Rows in order, what the asking node
	// verifies it by (verify.go).
	Proofs []Proof `json:"proofs,omitempty"`
	More   bool    `json:"more,omitempty"` // with Done: the member has captures after the last row
	Done   bool    `json:"done,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// maxPage bounds the rows of one page (the gateway's per-request cap).
const maxPage = cdx.MaxLimit

// versionPeer returns the peer that fetched v: the index's record of it,
// or, for a version indexed without one, its record's header.
func (svc *Service) versionPeer(ctx context.Context, v archive.Version) (string, error) {
	if v.Peer != "" {
		return v.Peer, nil
	}
	c, err := svc.Store.Read(ctx, v)
	if err != nil {
		return "", err
	}
	return c.Peer, nil
}

// pageQuery is the gateway query of a page request, for checking rows.
func pageQuery(q archive.Query, pr pageRequest) (cdx.Query, error) {
	if pr.Domain != "" {
		if q != (archive.Query{From: q.From, To: q.To}) {
			return cdx.Query{}, errors.New("domain page with a URL, prefix or host")
		}
		return cdx.Query{URL: pr.Domain, Match: cdx.MatchDomain, From: q.From, To: q.To}, nil
	}
	return cdx.FromStore(q)
}

// keyedRow is a row with its CDX key, computed once: a SURT costs a URL
// parse, too much to repeat in every comparison of a sort.
type keyedRow struct {
	k   cdx.Key
	row cdx.Row
}

// sortRows sorts rows in the page's order and drops duplicates (the same
// version from two replicas).
func sortRows(rows []keyedRow, reverse bool) []keyedRow {
	slices.SortFunc(rows, func(a, b keyedRow) int {
		c := a.k.Compare(b.k)
		if reverse {
			return -c
		}
		return c
	})
	return slices.CompactFunc(rows, func(a, b keyedRow) bool { return a.k.Compare(b.k) == 0 })
}

// mergeRows is sortRows for rows of several members: the fetcher and
// witnesses of duplicates are merged (each member proves the statements
// it holds).
func mergeRows(rows []keyedRow, reverse bool) []keyedRow {
	slices.SortFunc(rows, func(a, b keyedRow) int { return order(a.k, b.k, reverse) })
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].k.Compare(r.k) == 0 {
			out[n-1].row.Witnesses = mergeWitnesses(out[n-1].row.Witnesses, r.row.Witnesses)
			if out[n-1].row.Peer == "" {
				out[n-1].row.Peer = r.row.Peer
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// keyRows keys rows.
func keyRows(rows []cdx.Row) []keyedRow {
	out := make([]keyedRow, len(rows))
	for i, r := range rows {
		out[i] = keyedRow{k: cdx.KeyOf(r.Version), row: r}
	}
	return out
}

// unkey returns the rows of keyed rows.
func unkey(rows []keyedRow) []cdx.Row {
	out := make([]cdx.Row, len(rows))
	for i, r := range rows {
		out[i] = r.row
	}
	return out
}

// beyond reports whether key k comes after the resume key in the page's
// order.
func beyond(k cdx.Key, after *cdx.Key, reverse bool) bool {
	if after == nil {
		return true
	}
	c := k.Compare(*after)
	return (!reverse && c > 0) || (reverse && c < 0)
}

// localPage answers a page request from this node's store.
func (svc *Service) localPage(ctx context.Context, q archive.Query, pr pageRequest) ([]cdx.Row, bool, error) {
	gq, err := pageQuery(q, pr)
	if err != nil {
		return nil, false, fmt.Errorf("cdx page: %w", err)
	}
	if pr.N <= 0 || pr.N > maxPage {
		return nil, false, fmt.Errorf("cdx page: page size %d out of 1..%d", pr.N, maxPage)
	}
	ctx, cancel := context.WithTimeout(ctx, streamTimeout)
	defer cancel()
	var out []keyedRow
	more := false
	add := func(v archive.Version) error {
		k := cdx.KeyOf(v)
		if !beyond(k, pr.After, pr.Reverse) || !svc.Store.Shown(ctx, v) || !svc.listed(v) {
			return nil
		}
		out = append(out, keyedRow{k: k, row: cdx.Row{Version: v}})
		if len(out) >= 2*pr.N {
			out, more = sortRows(out, pr.Reverse)[:pr.N], true
		}
		return nil
	}
	if pr.Domain != "" {
		err = svc.Store.URLs(ctx, archive.Query{}, func(u string) error {
			if !cdx.InDomain(export.LowerHost(u), gq.URL) {
				return nil
			}
			return svc.Store.Scan(ctx, archive.Query{URL: u, From: q.From, To: q.To}, add)
		})
	} else {
		err = svc.Store.Scan(ctx, q, add)
	}
	if err != nil {
		return nil, false, fmt.Errorf("cdx page: %w", err)
	}
	out = sortRows(out, pr.Reverse)
	if len(out) > pr.N {
		out, more = out[:pr.N], true
	}
	rows := unkey(out)
	if pr.Peers {
		for i := range rows {
			if rows[i].Peer, err = svc.versionPeer(ctx, rows[i].Version); err != nil {
				return nil, false, fmt.Errorf("cdx page: peer of %s: %w", rows[i].URL, err)
			}
			if rows[i].Witnesses, err = svc.localWitnesses(ctx, rows[i].Version); err != nil {
				return nil, false, fmt.Errorf("cdx page: witnesses of %s: %w", rows[i].URL, err)
			}
		}
	}
	return rows, more, nil
}

// servePage answers op "page" in batches of listBatchSize rows.
func (svc *Service) servePage(ctx context.Context, req Request, s network.Stream) error {
	var pr pageRequest
	if req.Page != nil {
		pr = *req.Page
	}
	pr.Peers = false // each row's proof names its fetcher and witnesses
	rows, more, err := svc.localPage(ctx, req.Query, pr)
	if err != nil {
		return wire.WriteJSON(s, pageBatch{Done: true, Error: err.Error()})
	}
	for {
		b := pageBatch{Rows: rows[:min(len(rows), listBatchSize)]}
		vs := make([]archive.Version, len(b.Rows))
		for i, r := range b.Rows {
			vs[i] = r.Version
		}
		if b.Proofs, err = svc.proofs(ctx, vs); err != nil {
			return wire.WriteJSON(s, pageBatch{Done: true, Error: "cdx page: " + err.Error()})
		}
		for i := range b.Rows {
			// The row's Peer carries the version's: in JSON it hides
			// Version.Peer.
			b.Rows[i].Version, b.Rows[i].Peer = vs[i], vs[i].Peer
		}
		rows = rows[len(b.Rows):]
		b.Done = len(rows) == 0
		b.More = b.Done && more
		if err := wire.WriteJSON(s, b); err != nil {
			return err
		}
		if b.Done {
			return nil
		}
	}
}

// memberPage is what one member listed for a page request.
type memberPage struct {
	rows   []cdx.Row // as listed (unverified), then those kept
	proofs []*Proof  // of rows; nil for this node's own
	more   bool      // the member has rows after frontier
	// frontier is the key of the last row the member sent, in page
	// order; set with more: the member's rows beyond it are unknown.
	frontier *cdx.Key
	dropped  int    // rows that failed verification or that no holder listed
	sent     int    // rows the member listed, before judging
	excluded bool   // most of its rows dropped: its frontier does not cut the page (mergePages)
	by       string // the member's address, for errors
	peer     string // the member's peer id
}

// order compares keys in a page's order.
func order(a, b cdx.Key, reverse bool) int {
	if reverse {
		return -a.Compare(b)
	}
	return a.Compare(b)
}

// remotePage asks member c for a page and checks every row: it must match
// the query, its key must be the SHA-1 of its URL, it must come after the
// resume key in order, there must be no more than N, and each must come
// with its proof. It returns the rows unverified, with their proofs.
func (svc *Service) remotePage(ctx context.Context, c ring.Contact, q archive.Query, pr pageRequest) ([]cdx.Row, []*Proof, bool, error) {
	gq, err := pageQuery(q, pr)
	if err != nil {
		return nil, nil, false, err
	}
	s, err := svc.Open(ctx, c, Protocol)
	if err != nil {
		return nil, nil, false, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, Request{Op: "page", Query: q, Page: &pr}); err != nil {
		s.Reset()
		return nil, nil, false, fmt.Errorf("cdx page request: %w", err)
	}
	_ = s.CloseWrite()
	r := bufio.NewReader(s)
	var out []cdx.Row
	var proofs []*Proof
	for {
		var b pageBatch
		if err := wire.ReadJSON(r, maxHeaderFrame, &b); err != nil {
			s.Reset()
			return nil, nil, false, fmt.Errorf("cdx page reply: %w", err)
		}
		if b.Error != "" {
			return nil, nil, false, fmt.Errorf("cdx page reply: %w: %.200s", errRemote, b.Error)
		}
		if len(b.Proofs) != len(b.Rows) {
			s.Reset()
			return nil, nil, false, fmt.Errorf("cdx page reply: %w: %d proofs for %d rows", errBadReply, len(b.Proofs), len(b.Rows))
		}
		for _, row := range b.Rows {
			if !gq.Contains(row.Version) || row.Key != id.OfString(row.URL) || !beyond(cdx.KeyOf(row.Version), pr.After, pr.Reverse) {
				s.Reset()
				return nil, nil, false, fmt.Errorf("cdx page reply: %w: capture of %.100q does not match the request", errBadReply, row.URL)
			}
		}
		for i := range b.Rows {
			b.Rows[i].Version.Peer = b.Rows[i].Peer // see servePage
			out, proofs = append(out, b.Rows[i]), append(proofs, &b.Proofs[i])
		}
		if len(out) > pr.N {
			s.Reset()
			return nil, nil, false, fmt.Errorf("cdx page reply: %w: more than %d captures", errBadReply, pr.N)
		}
		if b.Done {
			return out, proofs, b.More, nil
		}
	}
}

// Page implements the gateway's Pager ring-wide: it asks every real node (at
// most queryFanout at a time) for its first req.N captures after the
// resume key and merges them. If a member fails, or the ring could not be
// enumerated completely, it returns an error naming them (wrapping
// ErrPartial) and no rows, so the CDX API never pages past captures it
// could not see.
func (svc *Service) Page(ctx context.Context, req cdx.PageRequest) ([]cdx.Row, bool, error) {
	var q archive.Query
	pr := pageRequest{After: req.After, Reverse: req.Reverse, N: req.N, Peers: req.Peers}
	if req.Query.Match == cdx.MatchDomain {
		q, pr.Domain = archive.Query{From: req.Query.From, To: req.Query.To}, req.Query.URL
	} else {
		q = req.Query.Store()
	}
	if _, err := pageQuery(q, pr); err != nil {
		return nil, false, fmt.Errorf("node cdx page: %w", err)
	}
	var pages []memberPage
	errs := svc.eachMember(ctx, func(m ring.Contact) (func(), error) {
		mp := memberPage{by: m.Addr, peer: m.Peer}
		var err error
		if m.Peer == svc.Self.Peer {
			mp.rows, mp.more, err = svc.localPage(ctx, q, pr)
			mp.proofs = make([]*Proof, len(mp.rows))
		} else {
			mp.rows, mp.proofs, mp.more, err = svc.remotePage(ctx, m, q, pr)
		}
		if mp.more && len(mp.rows) > 0 {
			keyed := keyRows(mp.rows)
			last := slices.MaxFunc(keyed, func(a, b keyedRow) int { return order(a.k, b.k, pr.Reverse) })
			mp.frontier = &last.k
		}
		return func() { pages = append(pages, mp) }, err
	})
	if len(errs) > 0 {
		return nil, false, fmt.Errorf("node cdx page: %w: %w", ErrPartial, errors.Join(errs...))
	}
	if err := svc.judgePages(ctx, pages, pr.Peers); err != nil {
		return nil, false, fmt.Errorf("node cdx page: %w", err)
	}
	rows, more, err := mergePages(pages, req.N, req.Reverse)
	if err != nil {
		return nil, false, fmt.Errorf("node cdx page: %w", err)
	}
	for _, mp := range pages {
		if mp.excluded {
			svc.excluded.Add(1)
			svc.Log().Warn("query: most rows of a member's CDX page failed verification: its frontier left out of the page",
				"member", mp.by, "peer", mp.peer, "listed", mp.sent, "dropped", mp.dropped)
		}
	}
	return rows, more, nil
}

// judgePages verifies the rows of every member's page together (judge)
// and leaves in each page the rows kept, with their fetchers and
// witnesses when peers asks for them, and the count of those dropped.
// Its error (the holders of a URL could not be found) fails the page.
func (svc *Service) judgePages(ctx context.Context, pages []memberPage, peers bool) error {
	var vs []archive.Version
	var ps []*Proof
	var by []string
	for _, mp := range pages {
		for i, r := range mp.rows {
			vs, ps, by = append(vs, r.Version), append(ps, mp.proofs[i]), append(by, mp.peer)
		}
	}
	fate, good, err := svc.judge(ctx, vs, ps, by, peers)
	if err != nil {
		return err
	}
	n := 0
	for p := range pages {
		mp := &pages[p]
		mp.sent = len(mp.rows)
		kept := mp.rows[:0]
		for i, r := range mp.rows {
			f, ws, local := fate[n], good[n], mp.proofs[i] == nil
			n++
			switch {
			case f == rowDropped, f == rowNotHeld:
				mp.dropped++
				continue
			case f == rowCopy:
				continue
			case local:
				r.Witnesses = mergeWitnesses(r.Witnesses, ws)
			case peers:
				r.Peer, r.Witnesses = r.Version.Peer, ws
			default:
				r.Peer, r.Witnesses = "", nil
			}
			kept = append(kept, r)
		}
		mp.rows, mp.proofs = kept, nil
	}
	return nil
}

// mergePages merges the members' pages (their kept rows) into the first
// n rows in the page's order, duplicates merged (mergeRows), and whether
// more follow. Each member's first n rows hold its part of the global
// first n. A member whose rows were dropped holds fewer than n before
// its frontier: rows past the first such frontier are left to the next
// page, which resumes before them; if none is left, the page cannot be
// given (ErrPartial, naming the member).
//
// A member more than half of whose rows were dropped is excluded (marked
// in pages): its frontier cuts nothing and its "more" is not believed,
// its verified rows are merged. Otherwise a member listing rows that
// fail, sorting first, would fail every page (or shrink it to a row): a
// hostile member could hide the ring's CDX. So every page keeps at
// least half of what each cutting member listed, and stays exact for
// the other members; what only an excluded member holds past its
// frontier may be missed.
func mergePages(pages []memberPage, n int, reverse bool) ([]cdx.Row, bool, error) {
	var all []cdx.Row
	var more bool
	var cut *memberPage
	for i, mp := range pages {
		all = append(all, mp.rows...)
		if sent := max(mp.sent, len(mp.rows)+mp.dropped); mp.dropped > 0 && 2*mp.dropped > sent {
			pages[i].excluded = true
			continue
		}
		more = more || mp.more
		if mp.dropped > 0 && mp.frontier != nil && (cut == nil || order(*mp.frontier, *cut.frontier, reverse) < 0) {
			cut = &pages[i]
		}
	}
	keyed := mergeRows(keyRows(all), reverse)
	if cut != nil {
		at, _ := slices.BinarySearchFunc(keyed, *cut.frontier, func(r keyedRow, k cdx.Key) int { return order(r.k, k, reverse) })
		for at < len(keyed) && keyed[at].k.Compare(*cut.frontier) == 0 {
			at++
		}
		if at == 0 {
			return nil, false, fmt.Errorf("%w: member %s: %d rows failed verification", ErrPartial, cut.by, cut.dropped)
		}
		if at < len(keyed) {
			keyed, more = keyed[:at], true
		}
	}
	if len(keyed) > n {
		keyed, more = keyed[:n], true
	}
	return unkey(keyed), more, nil
}
