package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

// Pager is implemented by archives that answer the CDX API themselves,
// ring-wide: herod's node. The gateway pages over Archive and Lister
// otherwise (listPager).
type Pager interface {
	// Page returns up to req.N captures selected by req.Query in CDX order
	// (descending with req.Reverse) after req.After, and whether more
	// follow them.
	Page(ctx context.Context, req cdx.PageRequest) (rows []cdx.Row, more bool, err error)
}

// ErrNoListing reports a query the archive cannot answer (a prefix, host
// or domain match without a Lister).
var ErrNoListing = errors.New("gateway: this archive cannot list URLs")

// listPager pages over an Archive (exact matches) and, if set, a Lister
// (prefix, host and domain matches), sorting in memory: for archives that
// are not Pagers. Each page lists everything the Lister returns.
type listPager struct {
	a    Archive
	list Lister
}

func (p listPager) Page(ctx context.Context, req cdx.PageRequest) ([]cdx.Row, bool, error) {
	var vs []archive.Version
	var err error
	switch {
	case req.Query.Match == cdx.MatchExact:
		vs, err = p.a.Versions(ctx, req.Query.URL)
	case p.list != nil:
		q := req.Query
		q.Limit = 0
		vs, err = p.list.List(ctx, q)
	default:
		return nil, false, fmt.Errorf("%w: matchType=%s needs an archive that lists URLs; use matchType=exact", ErrNoListing, req.Query.Match)
	}
	if err != nil {
		return nil, false, err
	}
	type keyed struct {
		k   cdx.Key
		row cdx.Row
	}
	var ks []keyed
	for _, v := range vs {
		if !req.Query.Contains(v) {
			continue
		}
		k := cdx.KeyOf(v) // once per row: a SURT costs a URL parse
		if req.After != nil {
			c := k.Compare(*req.After)
			if (!req.Reverse && c <= 0) || (req.Reverse && c >= 0) {
				continue
			}
		}
		ks = append(ks, keyed{k: k, row: cdx.Row{Version: v}})
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if req.Reverse {
			return b.k.Compare(a.k)
		}
		return a.k.Compare(b.k)
	})
	more := len(ks) > req.N
	rows := make([]cdx.Row, 0, min(len(ks), req.N))
	for _, k := range ks[:min(len(ks), req.N)] {
		rows = append(rows, k.row)
	}
	if req.Peers {
		for i := range rows {
			_, c, err := p.a.Get(ctx, rows[i].URL, rows[i].Time)
			if err != nil {
				return nil, false, fmt.Errorf("peer of %s: %w", rows[i].URL, err)
			}
			rows[i].Peer = c.Peer
		}
	}
	return rows, more, nil
}
