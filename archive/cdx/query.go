package cdx

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// MaxLimit is the most captures one CDX request or one member's list
// returns.
const MaxLimit = 100000

// MatchType says how Query.URL selects URLs.
type MatchType int

// Match types of a Query.
const (
	// MatchExact selects the one URL equal to Query.URL.
	MatchExact MatchType = iota
	// MatchPrefix selects the URLs whose canonical form starts with Query.URL.
	MatchPrefix
	// MatchHost selects the URLs whose host (with a non-default port, as in
	// the canonical form) equals Query.URL, whatever their scheme.
	MatchHost
	// MatchDomain selects the URLs of host Query.URL and of its
	// subdomains (the CDX API's matchType=domain).
	MatchDomain
	// MatchSURT selects the URLs whose SURT form starts with Query.URL
	// (archive.Query.SURT).
	MatchSURT
	// MatchAll selects the whole archive; Query.URL is empty.
	MatchAll
)

// String returns the pywb name of the match type.
func (m MatchType) String() string {
	switch m {
	case MatchPrefix:
		return "prefix"
	case MatchHost:
		return "host"
	case MatchDomain:
		return "domain"
	case MatchSURT:
		return "surt"
	case MatchAll:
		return "all"
	default:
		return "exact"
	}
}

// Query selects versions across URLs, for the CDX API and exports.
type Query struct {
	URL   string    // canonical URL, canonical URL prefix, or host; see Match
	Match MatchType // how URL selects
	From  time.Time // earliest capture time, inclusive; zero means no bound
	To    time.Time // latest capture time, inclusive; zero means no bound
	Limit int       // most versions to return; 0 means no limit
	// Revisits, in an export, adds an identical-payload-digest revisit
	// record for each day a URL was checked and found unchanged.
	Revisits bool
	// Hide, if set, names the captures an export leaves out (the access
	// rules); never sent between nodes.
	Hide Hider `json:"-"`
	// Filter narrows the selection (archive.Filter: regex, media type,
	// status, newest only, sample, part i of N).
	archive.Filter
}

// Hider names captures to leave out (Query.Hide). An implementation is a
// pointer, so that Query stays comparable.
type Hider interface {
	// Hidden reports whether the capture of url made at t is left out.
	Hidden(url string, t time.Time) bool
}

// Contains reports whether v is selected by q, Latest aside (which
// needs the URL's other versions): the reference definition of a match
// for every lister and exporter. A version without a status (0) passes
// the status and media type filters, which need the record: an export
// header carries only URL, time and digest.
func (q Query) Contains(v archive.Version) bool {
	if !q.From.IsZero() && v.Time.Before(q.From) {
		return false
	}
	if !q.To.IsZero() && v.Time.After(q.To) {
		return false
	}
	switch q.Match {
	case MatchPrefix:
		if !strings.HasPrefix(v.URL, q.URL) {
			return false
		}
	case MatchHost:
		if hostOf(v.URL) != q.URL {
			return false
		}
	case MatchDomain:
		if !InDomain(hostOf(v.URL), q.URL) {
			return false
		}
	case MatchSURT:
		if !strings.HasPrefix(archive.Surt(v.URL), q.URL) {
			return false
		}
	case MatchAll:
	default:
		if v.URL != q.URL {
			return false
		}
	}
	if q.Filter.IsZero() {
		return true
	}
	sel, err := archive.Query{Filter: q.Filter}.Selector()
	if err != nil || !sel.URL(v.URL) {
		return false
	}
	return v.Status == 0 || sel.Version(v)
}

// Store translates q into the store's scan (archive.Query). The CDX
// pager, which pages a domain by its own request field, does not call it
// for MatchDomain.
func (q Query) Store() archive.Query {
	aq := archive.Query{From: q.From, To: q.To, Filter: q.Filter}
	switch q.Match {
	case MatchHost:
		aq.Host = q.URL
	case MatchPrefix:
		aq.Prefix = q.URL
	case MatchDomain:
		aq.Domain = q.URL
	case MatchSURT:
		aq.SURT = q.URL
	case MatchAll:
		aq.All = true
	default:
		aq.URL = q.URL
	}
	return aq
}

// FromStore is the inverse of Query.Store, for checking what another node
// returns against the request it was sent: exactly one of URL, Prefix,
// Host, Domain, SURT and All must be set (no Query makes two), within
// canon.MaxLen, the time bounds in order and the filter well formed.
func FromStore(aq archive.Query) (Query, error) {
	q := Query{From: aq.From, To: aq.To, Filter: aq.Filter}
	n := 0
	for _, c := range []struct {
		set bool
		m   MatchType
		u   string
	}{
		{aq.URL != "", MatchExact, aq.URL},
		{aq.Prefix != "", MatchPrefix, aq.Prefix},
		{aq.Host != "", MatchHost, strings.ToLower(aq.Host)},
		{aq.Domain != "", MatchDomain, strings.ToLower(aq.Domain)},
		{aq.SURT != "", MatchSURT, aq.SURT},
		{aq.All, MatchAll, ""},
	} {
		if c.set {
			n++
			q.Match, q.URL = c.m, c.u
		}
	}
	if n != 1 {
		return q, errors.New("query needs exactly one of url, prefix, host, domain, surt and all")
	}
	if len(q.URL) > canon.MaxLen {
		return q, fmt.Errorf("query of %d bytes", len(q.URL))
	}
	if !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
		return q, errors.New("query ends before it starts")
	}
	if err := q.Filter.Check(); err != nil {
		return q, err
	}
	return q, nil
}

// InDomain reports whether host (which may carry a port) is domain or one
// of its subdomains; a port in domain must match too (archive.InDomain).
func InDomain(host, domain string) bool { return archive.InDomain(host, domain) }

// hostOf returns the host of u, with its port, as written.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}
