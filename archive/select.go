package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"strings"
	"sync"

	"github.com/herod-archive/herod/internal/id"
)

// Selections beyond a URL scope and dates: the filters every export and
// the CDX listing share (Query.Filter), and the scopes that cross hosts
// (Query.Domain, Query.SURT, Query.All). A Query is checked and compiled
// once per scan (Query.compile); the compiled form is what Scan and Export
// apply to each URL and version.

// Bounds of a Filter.
const (
	// MaxRegexLen bounds Filter.Regex: Go's regexp runs in time linear in
	// the URL, but its compiled program grows with the expression.
	MaxRegexLen = 1024
	// SampleAll is Filter.Sample's denominator: parts per million.
	SampleAll = 1000000
	// MaxParts bounds Filter.Parts.
	MaxParts = 1 << 16
)

// ErrSelection reports a selection (Query, Filter) that is malformed.
var ErrSelection = errors.New("archive: bad selection")

// Filter narrows a selection by URL and by version. Its zero value keeps
// everything. URL filters (Regex, Sample, Part) keep or drop every
// version of a URL together; version filters (Type, Status) apply to each
// version; Latest then keeps, of the versions left, the newest.
type Filter struct {
	// Regex, if set, is an RE2 expression the whole URL must match (as
	// the CDX API's filter=original:…), at most MaxRegexLen bytes.
	Regex string `json:"regex,omitempty"`
	// Type, if set, is the media type a version must have ("text/html"),
	// or a type and "/*" for any subtype ("image/*").
	Type string `json:"type,omitempty"`
	// Status, if non-zero, is the HTTP status a version must have.
	Status int `json:"status,omitempty"`
	// Latest keeps only the newest version of each URL among those the
	// rest of the selection keeps. It leaves no revisits to export.
	Latest bool `json:"latest,omitempty"`
	// Sample, if non-zero, keeps that many URLs per million, chosen by a
	// hash of the URL (InSample): the same URLs on every node and every
	// run, and a larger sample holds every smaller one.
	Sample int `json:"sample,omitempty"`
	// Part and Parts, if Parts is non-zero, keep part Part (1 to Parts)
	// of Parts disjoint parts that together make the selection, split by
	// the URL's ring key (PartOf): N workers each take one.
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts,omitempty"`
}

// Check reports whether f is well formed; errors wrap ErrSelection.
func (f Filter) Check() error {
	_, err := f.compile()
	return err
}

// IsZero reports whether f keeps everything.
func (f Filter) IsZero() bool { return f == Filter{} }

// urlKeyWord returns 8 bytes of the URL's ring key as a number, from
// byte offset i: Part reads the first 8 (the ring order), Sample the next
// 8, so that a sample and a part are independent.
func urlKeyWord(u string, i int) uint64 {
	k := id.OfString(u)
	return binary.BigEndian.Uint64(k[i : i+8])
}

// PartOf returns the part (1 to parts) of a selection split in parts that
// holds url: parts are equal arcs of the ring's key space, so each is a
// contiguous run of ring keys, held by a few nodes.
func PartOf(url string, parts int) int {
	hi, _ := bits.Mul64(urlKeyWord(url, 0), uint64(parts))
	return int(hi) + 1
}

// InSample reports whether url is among the perMillion URLs per million
// that a Filter.Sample of perMillion keeps.
func InSample(url string, perMillion int) bool {
	return urlKeyWord(url, 8)%SampleAll < uint64(perMillion)
}

// Selector is a Query checked and compiled, to apply to many URLs and
// versions (Query.Selector). It is safe for concurrent use.
type Selector struct {
	q  Query
	re *regexp.Regexp
}

// regexCache holds compiled expressions by source, so that checking
// rows one by one (cdx.Query.Contains) compiles each expression once.
var regexCache = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

// maxRegexCache bounds regexCache; when full it starts again empty.
const maxRegexCache = 64

// compileRegex compiles a whole-value match of expr, through regexCache.
func compileRegex(expr string) (*regexp.Regexp, error) {
	regexCache.Lock()
	defer regexCache.Unlock()
	if re, ok := regexCache.m[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		return nil, err
	}
	if len(regexCache.m) >= maxRegexCache {
		clear(regexCache.m)
	}
	regexCache.m[expr] = re
	return re, nil
}

// compile checks f and compiles its regular expression.
func (f Filter) compile() (*regexp.Regexp, error) {
	var re *regexp.Regexp
	if f.Regex != "" {
		if len(f.Regex) > MaxRegexLen {
			return nil, fmt.Errorf("%w: regex of %d bytes, at most %d", ErrSelection, len(f.Regex), MaxRegexLen)
		}
		var err error
		if re, err = compileRegex(f.Regex); err != nil {
			return nil, fmt.Errorf("%w: regex: %v", ErrSelection, err)
		}
	}
	switch {
	case f.Type != "" && !validType(f.Type):
		return nil, fmt.Errorf("%w: media type %.40q: want type/subtype or type/*", ErrSelection, f.Type)
	case f.Status != 0 && (f.Status < 100 || f.Status > 599):
		return nil, fmt.Errorf("%w: status %d", ErrSelection, f.Status)
	case f.Sample < 0 || f.Sample > SampleAll:
		return nil, fmt.Errorf("%w: sample of %d per million", ErrSelection, f.Sample)
	case f.Parts < 0 || f.Parts > MaxParts:
		return nil, fmt.Errorf("%w: %d parts, at most %d", ErrSelection, f.Parts, MaxParts)
	case f.Parts == 0 && f.Part != 0, f.Parts > 0 && (f.Part < 1 || f.Part > f.Parts):
		return nil, fmt.Errorf("%w: part %d of %d", ErrSelection, f.Part, f.Parts)
	}
	return re, nil
}

// validType reports whether t looks like a media type or "type/*".
func validType(t string) bool {
	a, b, ok := strings.Cut(t, "/")
	return ok && a != "" && b != "" && len(t) <= 255 && !strings.ContainsAny(t, " ;,\t") && t == strings.ToLower(t)
}

// Selector checks q's scopes and filter and compiles them; errors wrap
// ErrSelection.
func (q Query) Selector() (*Selector, error) {
	re, err := q.Filter.compile()
	if err != nil {
		return nil, err
	}
	if q.SURT != "" && len(q.SURT) > MaxRegexLen*8 {
		return nil, fmt.Errorf("%w: surt prefix of %d bytes", ErrSelection, len(q.SURT))
	}
	return &Selector{q: q, re: re}, nil
}

// hostMay reports whether some URL of host (lower case, with its port)
// can be in the domain and SURT scopes of the query.
func (m *Selector) hostMay(host string) bool {
	if m.q.Domain != "" && !InDomain(host, m.q.Domain) {
		return false
	}
	if m.q.SURT != "" {
		// Every URL of host keys as base, then its port if any, then ")":
		// a prefix of one of those starts with base or is a prefix of it.
		h := host
		if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
			h = h[:i]
		}
		base := strings.TrimSuffix(Surt("http://"+h+"/"), ")/")
		return strings.HasPrefix(m.q.SURT, base) || strings.HasPrefix(base, m.q.SURT)
	}
	return true
}

// URL reports whether the query keeps (some versions of) u: its URL,
// host, prefix, domain and SURT scopes and its URL filters.
func (m *Selector) URL(u string) bool {
	q := m.q
	switch {
	case q.URL != "" && u != q.URL,
		q.Host != "" && !strings.EqualFold(hostOf(u), q.Host),
		!strings.HasPrefix(u, q.Prefix):
		return false
	case q.Domain != "" && !InDomain(hostOf(u), q.Domain),
		q.SURT != "" && !strings.HasPrefix(Surt(u), q.SURT),
		m.re != nil && !m.re.MatchString(u),
		q.Sample != 0 && !InSample(u, q.Sample),
		q.Parts != 0 && PartOf(u, q.Parts) != q.Part:
		return false
	}
	return true
}

// Version reports whether the query keeps v, a version of a URL it keeps,
// by its time, status and media type (Latest aside: that needs the URL's
// other versions).
func (m *Selector) Version(v Version) bool {
	q := m.q
	switch {
	case !q.contains(v.Time),
		q.Status != 0 && v.Status != q.Status,
		q.Type != "" && !typeMatches(v.ContentType, q.Type):
		return false
	}
	return true
}

// typeMatches reports whether media type mt is t, or of t's type when t
// ends in "/*".
func typeMatches(mt, t string) bool {
	if p, ok := strings.CutSuffix(t, "/*"); ok {
		a, _, _ := strings.Cut(mt, "/")
		return a == p
	}
	return mt == t
}

// Keeps reports whether q selects v among the versions of its URL,
// Latest aside (whether v is the newest kept depends on the others): the
// reference definition of a match, for tests and for checking what
// another node sends. A malformed query keeps nothing.
func (q Query) Keeps(v Version) bool {
	m, err := q.Selector()
	return err == nil && m.URL(v.URL) && m.Version(v)
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
