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
}

// Hider names captures to leave out (Query.Hide). An implementation is a
// pointer, so that Query stays comparable.
type Hider interface {
	// Hidden reports whether the capture of url made at t is left out.
	Hidden(url string, t time.Time) bool
}

// Contains reports whether v is selected by q: the reference definition
// of a match for every lister and exporter.
func (q Query) Contains(v archive.Version) bool {
	if !q.From.IsZero() && v.Time.Before(q.From) {
		return false
	}
	if !q.To.IsZero() && v.Time.After(q.To) {
		return false
	}
	switch q.Match {
	case MatchPrefix:
		return strings.HasPrefix(v.URL, q.URL)
	case MatchHost:
		return hostOf(v.URL) == q.URL
	case MatchDomain:
		return InDomain(hostOf(v.URL), q.URL)
	default:
		return v.URL == q.URL
	}
}

// Store translates q into the store's scan (archive.Query), which has no
// domain match: MatchDomain (like MatchExact) becomes a URL.
func (q Query) Store() archive.Query {
	aq := archive.Query{From: q.From, To: q.To}
	switch q.Match {
	case MatchHost:
		aq.Host = q.URL
	case MatchPrefix:
		aq.Prefix = q.URL
	default:
		aq.URL = q.URL
	}
	return aq
}

// FromStore is the inverse of Query.Store, for checking what another node
// returns against the request it was sent: exactly one of URL, Prefix and
// Host must be set (Host and Prefix together are refused: no Query makes
// them), within canon.MaxLen, and the time bounds in order.
func FromStore(aq archive.Query) (Query, error) {
	q := Query{From: aq.From, To: aq.To}
	switch {
	case aq.URL != "" && aq.Host == "" && aq.Prefix == "":
		q.Match, q.URL = MatchExact, aq.URL
	case aq.Prefix != "" && aq.URL == "" && aq.Host == "":
		q.Match, q.URL = MatchPrefix, aq.Prefix
	case aq.Host != "" && aq.URL == "" && aq.Prefix == "":
		q.Match, q.URL = MatchHost, strings.ToLower(aq.Host)
	default:
		return q, errors.New("query needs exactly one of url, prefix and host")
	}
	if len(q.URL) > canon.MaxLen {
		return q, fmt.Errorf("query of %d bytes", len(q.URL))
	}
	if !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
		return q, errors.New("query ends before it starts")
	}
	return q, nil
}

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

// hostOf returns the host of u, with its port, as written.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}
