package query

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
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
	Domain  string          `json:"domain,omitempty"` // matchType=domain (Query is then empty)
	After   *gateway.CDXKey `json:"after,omitempty"`
	Reverse bool            `json:"reverse,omitempty"`
	N       int             `json:"n"`
	Peers   bool            `json:"peers,omitempty"`
}

// pageBatch is one reply frame of op "page".
type pageBatch struct {
	Rows  []gateway.CDXRow `json:"rows,omitempty"`
	More  bool             `json:"more,omitempty"` // with Done: the member has captures after the last row
	Done  bool             `json:"done,omitempty"`
	Error string           `json:"error,omitempty"`
}

// maxPage bounds the rows of one page (the gateway's per-request cap).
const maxPage = gateway.MaxCDXLimit

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
func pageQuery(q archive.Query, pr pageRequest) (gateway.Query, error) {
	if pr.Domain != "" {
		if q != (archive.Query{From: q.From, To: q.To}) {
			return gateway.Query{}, errors.New("domain page with a URL, prefix or host")
		}
		return gateway.Query{URL: pr.Domain, Match: gateway.MatchDomain, From: q.From, To: q.To}, nil
	}
	return gatewayQuery(q)
}

// keyedRow is a row with its CDX key, computed once: a SURT costs a URL
// parse, too much to repeat in every comparison of a sort.
type keyedRow struct {
	k   gateway.CDXKey
	row gateway.CDXRow
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

// keyRows keys rows.
func keyRows(rows []gateway.CDXRow) []keyedRow {
	out := make([]keyedRow, len(rows))
	for i, r := range rows {
		out[i] = keyedRow{k: gateway.KeyOf(r.Version), row: r}
	}
	return out
}

// unkey returns the rows of keyed rows.
func unkey(rows []keyedRow) []gateway.CDXRow {
	out := make([]gateway.CDXRow, len(rows))
	for i, r := range rows {
		out[i] = r.row
	}
	return out
}

// beyond reports whether key k comes after the resume key in the page's
// order.
func beyond(k gateway.CDXKey, after *gateway.CDXKey, reverse bool) bool {
	if after == nil {
		return true
	}
	c := k.Compare(*after)
	return (!reverse && c > 0) || (reverse && c < 0)
}

// localPage answers a page request from this node's store.
func (svc *Service) localPage(ctx context.Context, q archive.Query, pr pageRequest) ([]gateway.CDXRow, bool, error) {
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
		k := gateway.KeyOf(v)
		if !beyond(k, pr.After, pr.Reverse) || !svc.Store.Shown(ctx, v) || !svc.listed(v) {
			return nil
		}
		out = append(out, keyedRow{k: k, row: gateway.CDXRow{Version: v}})
		if len(out) >= 2*pr.N {
			out, more = sortRows(out, pr.Reverse)[:pr.N], true
		}
		return nil
	}
	if pr.Domain != "" {
		err = svc.Store.URLs(ctx, archive.Query{}, func(u string) error {
			if !gateway.InDomain(export.LowerHost(u), gq.URL) {
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
	rows, more, err := svc.localPage(ctx, req.Query, pr)
	if err != nil {
		return wire.WriteJSON(s, pageBatch{Done: true, Error: err.Error()})
	}
	for {
		b := pageBatch{Rows: rows[:min(len(rows), listBatchSize)]}
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

// remotePage asks member c for a page and checks every row: it must match
// the query, its key must be the SHA-1 of its URL, it must come after the
// resume key in order, and there must be no more than N.
func (svc *Service) remotePage(ctx context.Context, c ring.Contact, q archive.Query, pr pageRequest) ([]gateway.CDXRow, bool, error) {
	gq, err := pageQuery(q, pr)
	if err != nil {
		return nil, false, err
	}
	s, err := svc.Open(ctx, c, Protocol)
	if err != nil {
		return nil, false, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, Request{Op: "page", Query: q, Page: &pr}); err != nil {
		s.Reset()
		return nil, false, fmt.Errorf("cdx page request: %w", err)
	}
	_ = s.CloseWrite()
	r := bufio.NewReader(s)
	var out []gateway.CDXRow
	for {
		var b pageBatch
		if err := wire.ReadJSON(r, maxHeaderFrame, &b); err != nil {
			s.Reset()
			return nil, false, fmt.Errorf("cdx page reply: %w", err)
		}
		if b.Error != "" {
			return nil, false, fmt.Errorf("cdx page reply: %w: %.200s", errRemote, b.Error)
		}
		for _, row := range b.Rows {
			if !gq.Contains(row.Version) || row.Key != id.OfString(row.URL) || !beyond(gateway.KeyOf(row.Version), pr.After, pr.Reverse) {
				s.Reset()
				return nil, false, fmt.Errorf("cdx page reply: %w: capture of %.100q does not match the request", errBadReply, row.URL)
			}
		}
		out = append(out, b.Rows...)
		if len(out) > pr.N {
			s.Reset()
			return nil, false, fmt.Errorf("cdx page reply: %w: more than %d captures", errBadReply, pr.N)
		}
		if b.Done {
			return out, b.More, nil
		}
	}
}

// Page implements gateway.Pager ring-wide: it asks every real node (at
// most queryFanout at a time) for its first req.N captures after the
// resume key and merges them. If a member fails, or the ring could not be
// enumerated completely, it returns an error naming them (wrapping
// ErrPartial) and no rows, so the CDX API never pages past captures it
// could not see.
func (svc *Service) Page(ctx context.Context, req gateway.PageRequest) ([]gateway.CDXRow, bool, error) {
	var q archive.Query
	pr := pageRequest{After: req.After, Reverse: req.Reverse, N: req.N, Peers: req.Peers}
	if req.Query.Match == gateway.MatchDomain {
		q, pr.Domain = archive.Query{From: req.Query.From, To: req.Query.To}, req.Query.URL
	} else {
		q = archiveQuery(req.Query)
	}
	if _, err := pageQuery(q, pr); err != nil {
		return nil, false, fmt.Errorf("node cdx page: %w", err)
	}
	var all []gateway.CDXRow
	var more bool
	errs := svc.eachMember(ctx, func(m ring.Contact) (func(), error) {
		var rows []gateway.CDXRow
		var mmore bool
		var err error
		if m.Peer == svc.Self.Peer {
			rows, mmore, err = svc.localPage(ctx, q, pr)
		} else {
			rows, mmore, err = svc.remotePage(ctx, m, q, pr)
		}
		return func() { all, more = append(all, rows...), more || mmore }, err
	})
	if len(errs) > 0 {
		return nil, false, fmt.Errorf("node cdx page: %w: %w", ErrPartial, errors.Join(errs...))
	}
	keyed := sortRows(keyRows(all), req.Reverse)
	if len(keyed) > req.N {
		keyed, more = keyed[:req.N], true
	}
	return unkey(keyed), more, nil
}

var _ gateway.Pager = (*Service)(nil)
