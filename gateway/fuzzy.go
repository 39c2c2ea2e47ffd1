package gateway

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

// maxFuzzyVersions bounds the versions a fuzzy match lists: the
// candidates are the first maxFuzzyVersions versions of URLs with the
// same path and another query (one Lister call), plus the versions of the
// URL without its query (one Versions call).
const maxFuzzyVersions = 100

// FuzzyHeader names the response header that says a replay served the
// capture of another URL, given as its value, under the fuzzy rules.
const FuzzyHeader = "X-Archive-Fuzzy"

//go:embed fuzzy.json
var fuzzyJSON []byte

// fuzzyRule is one rule of fuzzy.json.
type fuzzyRule struct {
	Name string `json:"name"`
	// Params are the parameter names the rule ignores: exact names, or a
	// prefix followed by '*' ("utm_*"; "*" is every name).
	Params []string `json:"params"`
	// Value, when set, restricts the rule to parameters whose whole value
	// matches this regular expression.
	Value string `json:"value"`
	// IgnoreOrder makes the order of parameters irrelevant.
	IgnoreOrder bool           `json:"ignoreOrder"`
	Examples    []fuzzyExample `json:"examples"`

	value *regexp.Regexp
}

// fuzzyExample is a request and a capture URL that the rules hold for
// the same resource (Same) or not.
type fuzzyExample struct {
	Request string `json:"request"`
	Capture string `json:"capture"`
	Same    bool   `json:"same"`
}

// fuzzyRules is a parsed rule set.
type fuzzyRules struct {
	rules       []fuzzyRule
	ignoreOrder bool
}

// defaultFuzzy is the rule set of fuzzy.json.
var defaultFuzzy = mustFuzzyRules(fuzzyJSON)

func mustFuzzyRules(b []byte) *fuzzyRules {
	fr, err := parseFuzzyRules(b)
	if err != nil {
		panic(err)
	}
	return fr
}

// parseFuzzyRules reads a rule set in the form of fuzzy.json.
func parseFuzzyRules(b []byte) (*fuzzyRules, error) {
	var doc struct {
		Rules []fuzzyRule `json:"rules"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("gateway: fuzzy rules: %w", err)
	}
	return newFuzzyRules(doc.Rules)
}

func newFuzzyRules(rules []fuzzyRule) (*fuzzyRules, error) {
	fr := &fuzzyRules{rules: rules}
	for i := range fr.rules {
		r := &fr.rules[i]
		if r.Value != "" {
			re, err := regexp.Compile(r.Value)
			if err != nil {
				return nil, fmt.Errorf("gateway: fuzzy rule %q: %w", r.Name, err)
			}
			r.value = re
		}
		fr.ignoreOrder = fr.ignoreOrder || r.IgnoreOrder
	}
	return fr, nil
}

// ignored reports whether a rule ignores the parameter name=value.
func (fr *fuzzyRules) ignored(name, value string) bool {
	for _, r := range fr.rules {
		if r.value != nil && !r.value.MatchString(value) {
			continue
		}
		for _, p := range r.Params {
			if p == name || (strings.HasSuffix(p, "*") && strings.HasPrefix(name, p[:len(p)-1])) {
				return true
			}
		}
	}
	return false
}

// params returns the parameters of a raw query that no rule ignores, in
// order, or sorted when a rule ignores the order. Values stay as written
// (canonical URLs escape them one way).
func (fr *fuzzyRules) params(rawQuery string) []string {
	var out []string
	for _, kv := range strings.Split(rawQuery, "&") {
		if kv == "" {
			continue
		}
		name, value, _ := strings.Cut(kv, "=")
		if !fr.ignored(name, value) {
			out = append(out, kv)
		}
	}
	if fr.ignoreOrder {
		slices.Sort(out)
	}
	return out
}

// same reports whether the rules hold the URLs for the same resource:
// the same URL up to the query, and the same parameters once the rules
// applied.
func (fr *fuzzyRules) same(a, b string) bool {
	ab, aq, _ := strings.Cut(a, "?")
	bb, bq, _ := strings.Cut(b, "?")
	return ab == bb && slices.Equal(fr.params(aq), fr.params(bq))
}

// fuzzyCandidate is a URL with captures, scored against a request.
type fuzzyCandidate struct {
	url      string
	versions []archive.Version // oldest first
	same     bool              // equal to the request under the rules
	pairs    int               // parameters (name=value) in common
	names    int               // further parameter names in common, values differing
	others   int               // parameters in one query only
	distance time.Duration     // from the request's time to the capture replay would select
}

// score fills c's similarity to a request with parameters req (after
// the rules) at time at.
func (fr *fuzzyRules) score(c *fuzzyCandidate, req []string, at time.Time) {
	_, q, _ := strings.Cut(c.url, "?")
	got := fr.params(q)
	c.same = slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(req))) && (fr.ignoreOrder || slices.Equal(got, req))
	left := slices.Clone(got)
	var unmatched []string
	for _, p := range req {
		if i := slices.Index(left, p); i >= 0 {
			c.pairs++
			left = slices.Delete(left, i, i+1)
		} else {
			unmatched = append(unmatched, p)
		}
	}
	for _, p := range unmatched {
		name, _, _ := strings.Cut(p, "=")
		if i := slices.IndexFunc(left, func(l string) bool { n, _, _ := strings.Cut(l, "="); return n == name }); i >= 0 {
			c.names++
			left = slices.Delete(left, i, i+1)
		}
	}
	c.others = len(unmatched) - c.names + len(left)
	v := c.versions[selectVersion(c.versions, at)]
	c.distance = v.Time.Sub(at).Abs()
}

// better orders candidates, best first: equal under the rules, then more
// parameters in common, more names in common, fewer parameters in one
// query only, the capture closest in time, and the URL.
func better(a, b *fuzzyCandidate) int {
	if a.same != b.same {
		if a.same {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(b.pairs, a.pairs); c != 0 {
		return c
	}
	if c := cmp.Compare(b.names, a.names); c != 0 {
		return c
	}
	if c := cmp.Compare(a.others, b.others); c != 0 {
		return c
	}
	if c := cmp.Compare(a.distance, b.distance); c != 0 {
		return c
	}
	return strings.Compare(a.url, b.url)
}

// fuzzyFor is fuzzyMatch for a request whose URL has no capture: it
// logs and counts an archive failure and then reports no match, so that
// the reader gets the 404 the URL itself earned.
func (s *Server) fuzzyFor(ctx context.Context, u string, at time.Time) (string, []archive.Version) {
	m, vs, err := s.fuzzyMatch(ctx, u, at)
	if err != nil {
		s.stats.archiveErrors.Add(1)
		s.log.Warn("gateway: fuzzy match failed", "url", u, "err", err)
		return "", nil
	}
	if m != "" {
		s.stats.fuzzy.Add(1)
	}
	return m, vs
}

// fuzzyMatch returns the URL whose captures stand for u, a canonical URL
// without captures of its own, and their versions (oldest first): among
// the URLs with u's scheme, host and path and another query (or none),
// the best by the rules (see better) for a reader at time at. It never
// returns a URL of another path. "" means none; an error means the
// archive could not answer.
func (s *Server) fuzzyMatch(ctx context.Context, u string, at time.Time) (string, []archive.Version, error) {
	base, query, _ := strings.Cut(u, "?")
	var cands []*fuzzyCandidate
	if u != base {
		vs, err := s.cfg.Archive.Versions(ctx, base)
		if err != nil {
			return "", nil, fmt.Errorf("fuzzy match: %w", err)
		}
		if len(vs) > 0 {
			cands = append(cands, &fuzzyCandidate{url: base, versions: vs})
		}
	}
	if s.list != nil {
		vs, err := s.list.List(ctx, cdx.Query{URL: base + "?", Match: cdx.MatchPrefix, Limit: maxFuzzyVersions})
		if err != nil {
			return "", nil, fmt.Errorf("fuzzy match: %w", err)
		}
		byURL := map[string]*fuzzyCandidate{}
		for _, v := range vs {
			if v.URL == u || !strings.HasPrefix(v.URL, base+"?") {
				continue
			}
			if c := byURL[v.URL]; c != nil {
				c.versions = append(c.versions, v)
				continue
			}
			c := &fuzzyCandidate{url: v.URL, versions: []archive.Version{v}}
			byURL[v.URL] = c
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return "", nil, nil
	}
	req := defaultFuzzy.params(query)
	for _, c := range cands {
		slices.SortFunc(c.versions, func(a, b archive.Version) int { return a.Time.Compare(b.Time) })
		defaultFuzzy.score(c, req, at)
	}
	best := slices.MinFunc(cands, better)
	return best.url, best.versions, nil
}
