package sampleweb

import (
	"fmt"
	"slices"
	"sort"
)

// versions.go answers, per day, what a complete crawl reaches and which of
// those URLs it stores a new version of.

// maxReachCache bounds the days whose Reachable lists are kept.
const maxReachCache = 64

// Reachable returns the sorted canonical URLs a crawler reaches from Seeds
// on day d by following a[href], img[src], link[href] (stylesheets),
// script[src] and iframe[src], including redirect targets (and the
// redirecting URL itself), images, stylesheets, scripts and links that
// answer 404, and excluding paths robots.txt disallows and URLs with a
// query string (dynamic URLs; see ReachableDynamic). robots.txt itself is
// not included. Every url() target in a stylesheet is also an <img> of the
// pages that use it, so crawlers that parse CSS reach the same set. Nil
// before Start.
func (w *Web) Reachable(d int) []string { return w.reachable(d, false) }

// ReachableDynamic is Reachable with URLs that have a query string followed
// too (search result pages, page URLs with a session parameter).
func (w *Web) ReachableDynamic(d int) []string { return w.reachable(d, true) }

func (w *Web) reachable(d int, dynamic bool) []string {
	d = max(d, 0)
	bases := w.basesCopy()
	if len(bases) == 0 {
		return nil
	}
	k := reachKey{d, dynamic}
	w.mu.Lock()
	got, ok := w.reached[k]
	w.mu.Unlock()
	if ok {
		return append([]string(nil), got...)
	}
	got = urls(w.m.reach(d, dynamic), bases)
	w.mu.Lock()
	if len(w.reached) >= maxReachCache {
		for old := range w.reached {
			delete(w.reached, old)
			break
		}
	}
	w.reached[k] = got
	w.mu.Unlock()
	return append([]string(nil), got...)
}

// knownSet is the union of Reachable(0..day).
type knownSet struct {
	day  int
	urls map[string]bool
}

// known returns the union of Reachable(0..d) (empty for d < 0). The caller
// must not modify it.
func (w *Web) known(d int) map[string]bool {
	w.mu.Lock()
	ks := w.union
	w.mu.Unlock()
	if ks == nil || ks.day > d {
		ks = &knownSet{day: -1, urls: make(map[string]bool)}
	} else {
		cp := &knownSet{day: ks.day, urls: make(map[string]bool, len(ks.urls))}
		for u := range ks.urls {
			cp.urls[u] = true
		}
		ks = cp
	}
	for ks.day < d {
		ks.day++
		for _, u := range w.Reachable(ks.day) {
			ks.urls[u] = true
		}
	}
	w.mu.Lock()
	if w.union == nil || w.union.day < ks.day {
		w.union = ks
	}
	w.mu.Unlock()
	return ks.urls
}

// NewVersions returns the sorted URLs for which a crawl of day d stores a
// new version, given that every earlier day was crawled completely and
// every known URL (the union of Reachable(0..d)) is fetched again each day:
// on day 0 that is Reachable(0); on a later day it is the URLs first reached
// that day plus the known URLs whose answer changed since day d-1: another
// body, or another status (a page deleted: 200 then 404). URLs that answer
// 301 or 404 are included when first reached (their bodies never change),
// as an archive that keeps every answer stores them.
func (w *Web) NewVersions(d int) []string {
	d = max(d, 0)
	cur := w.Reachable(d)
	if cur == nil {
		return nil
	}
	if d == 0 {
		return cur
	}
	known := w.known(d - 1)
	var out []string
	for _, u := range cur {
		if !known[u] {
			out = append(out, u)
		}
	}
	for u := range known {
		if w.changedOn(d, u) {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}

// changedOn reports whether the answer for rawURL on day d differs from
// its answer on day d-1 (d >= 1): another status (a page deleted or
// restored) or another body of a page.
func (w *Web) changedOn(d int, rawURL string) bool {
	l, ok := w.locate(rawURL)
	if !ok {
		return false
	}
	path, query := splitQuery(l.pathq)
	res := w.m.lookup(l.h, path, query, d, nil, false)
	prev := w.m.lookup(l.h, path, query, d-1, nil, false)
	if res.status != prev.status {
		return true
	}
	return res.status == 200 && res.lastMod == d
}

// OncePerURL compares the requests a crawl made per URL (got) with the
// URLs it should have requested exactly once (want, sorted): it returns
// those of want not requested, those requested more than once (with
// their count), and the requested URLs not in want.
func OncePerURL(want []string, got map[string]int) (missing, twice, unknown []string) {
	for _, u := range want {
		switch n := got[u]; {
		case n == 0:
			missing = append(missing, u)
		case n > 1:
			twice = append(twice, fmt.Sprintf("%s (%d)", u, n))
		}
	}
	for u := range got {
		if _, ok := slices.BinarySearch(want, u); !ok {
			unknown = append(unknown, u)
		}
	}
	slices.Sort(unknown)
	return missing, twice, unknown
}
