package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// CDX order and paging: the CDX API sorts captures by SURT, then capture
// time, then URL and payload digest (so the order is total), and pages
// through them with a resume key, the CDXKey of the last capture a page
// consumed.

// CDXKey is a capture's position in CDX order.
type CDXKey struct {
	SURT   string
	Time   time.Time
	URL    string
	Digest id.ID
}

// KeyOf returns the CDX key of v.
func KeyOf(v archive.Version) CDXKey {
	return CDXKey{SURT: archive.Surt(v.URL), Time: v.Time, URL: v.URL, Digest: v.Digest}
}

// Compare orders keys in CDX order.
func (k CDXKey) Compare(o CDXKey) int {
	return cmp.Or(strings.Compare(k.SURT, o.SURT), k.Time.Compare(o.Time), strings.Compare(k.URL, o.URL), k.Digest.Cmp(o.Digest))
}

// String is the key's resume-key text: SURT, RFC 3339 time, URL and
// digest (hex), space-separated and then query-escaped, so that it can be
// pasted into a query string as printed (the Wayback CDX server's habit).
func (k CDXKey) String() string {
	return url.QueryEscape(k.SURT + " " + k.Time.UTC().Format(time.RFC3339Nano) + " " + k.URL + " " + k.Digest.String())
}

// ParseCDXKey reads a resume key, escaped as String prints it or
// unescaped once by the query string.
func ParseCDXKey(s string) (CDXKey, error) {
	if len(s) > maxCursorLen*2 {
		return CDXKey{}, fmt.Errorf("%w: resumeKey of %d bytes", ErrQuery, len(s))
	}
	if !strings.Contains(s, " ") {
		if u, err := url.QueryUnescape(s); err == nil {
			s = u
		}
	}
	parts := strings.Split(s, " ")
	if len(parts) != 4 {
		return CDXKey{}, fmt.Errorf("%w: resumeKey %.80q is not one this server printed", ErrQuery, s)
	}
	t, err1 := time.Parse(time.RFC3339Nano, parts[1])
	d, err2 := id.Parse(parts[3])
	if err := errors.Join(err1, err2); err != nil {
		return CDXKey{}, fmt.Errorf("%w: resumeKey: %v", ErrQuery, err)
	}
	return CDXKey{SURT: parts[0], Time: t.UTC(), URL: parts[2], Digest: d}, nil
}

// CDXRow is one capture as the CDX API lists it.
type CDXRow struct {
	archive.Version
	// Peer is the libp2p peer id of the node that fetched the version,
	// filled in only when PageRequest.Peers asks for it.
	Peer string `json:"peer,omitempty"`
	// Witnesses are the statements of holders other than the fetcher
	// that vouch for the version's date (archive.WitnessRule.Date),
	// earliest first, filled in with Peer by Pagers that date versions.
	Witnesses []archive.Witness `json:"witnesses,omitempty"`
}

// PageRequest asks a Pager for one page of captures.
type PageRequest struct {
	Query   Query   // the selection; its Limit is ignored
	After   *CDXKey // start strictly after this key (Reverse: strictly before); nil: at the start (end)
	Reverse bool    // descending CDX order
	N       int     // most rows to return, > 0
	Peers   bool    // fill in CDXRow.Peer and CDXRow.Witnesses
}

// Pager is implemented by archives that answer the CDX API themselves,
// ring-wide: herod's node. The gateway pages over Archive and Lister
// otherwise (listPager).
type Pager interface {
	// Page returns up to req.N captures selected by req.Query in CDX order
	// (descending with req.Reverse) after req.After, and whether more
	// follow them.
	Page(ctx context.Context, req PageRequest) (rows []CDXRow, more bool, err error)
}

// ErrNoListing reports a query the archive cannot answer (a prefix, host
// or domain match without a Lister).
var ErrNoListing = errors.New("gateway: this archive cannot list URLs")

// InDomain reports whether host (which may carry a port) is domain or one
// of its subdomains; a port in domain must match too.
func InDomain(host, domain string) bool {
	host, domain = strings.ToLower(host), strings.ToLower(domain)
	if !strings.Contains(domain, ":") {
		if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
			host = host[:i]
		}
	}
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// listPager pages over an Archive (exact matches) and, if set, a Lister
// (prefix, host and domain matches), sorting in memory: for archives that
// are not Pagers. Each page lists everything the Lister returns.
type listPager struct {
	a    Archive
	list Lister
}

func (p listPager) Page(ctx context.Context, req PageRequest) ([]CDXRow, bool, error) {
	var vs []archive.Version
	var err error
	switch {
	case req.Query.Match == MatchExact:
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
		k   CDXKey
		row CDXRow
	}
	var ks []keyed
	for _, v := range vs {
		if !req.Query.Contains(v) {
			continue
		}
		k := KeyOf(v) // once per row: a SURT costs a URL parse
		if req.After != nil {
			c := k.Compare(*req.After)
			if (!req.Reverse && c <= 0) || (req.Reverse && c >= 0) {
				continue
			}
		}
		ks = append(ks, keyed{k: k, row: CDXRow{Version: v}})
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if req.Reverse {
			return b.k.Compare(a.k)
		}
		return a.k.Compare(b.k)
	})
	more := len(ks) > req.N
	rows := make([]CDXRow, 0, min(len(ks), req.N))
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
