package sampleweb

import (
	"sort"
	"strings"
)

// reach.go computes, from the model alone, which URLs a crawler reaches on a
// day and which of them it stores a new version of. Tests check these
// answers against a real crawl of the served bytes.

// loc is a URL of the sample web: a host index and a path with query.
type loc struct {
	h     int
	pathq string
}

func splitQuery(pathq string) (path, query string) {
	path, query, _ = strings.Cut(pathq, "?")
	return path, query
}

// reach returns every URL reached on day d by a breadth-first crawl from
// the roots of all hosts that follows every link and embedded object,
// skips robots-disallowed paths, and, unless dynamic, URLs with a query.
// As RFC 9309 says, a robots.txt answering 4xx allows everything and one
// answering 5xx disallows everything.
func (m *model) reach(d int, dynamic bool) []loc {
	seen := make(map[loc]bool)
	var queue []loc
	allowAll := m.plain || (m.robotsFailing() && m.robotsStatus < 500)
	denyAll := m.robotsFailing() && m.robotsStatus >= 500
	visit := func(l loc) {
		path, query := splitQuery(l.pathq)
		if seen[l] || denyAll || (!allowAll && strings.HasPrefix(path, disallowed)) || (query != "" && !dynamic) {
			return
		}
		seen[l] = true
		queue = append(queue, l)
	}
	for h := range m.hosts {
		visit(loc{h, "/"})
	}
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		path, query := splitQuery(l.pathq)
		res := m.lookup(l.h, path, query, d, nil, false)
		for _, r := range res.links {
			h, p := m.target(r)
			visit(loc{h, p})
		}
	}
	out := make([]loc, 0, len(seen))
	for l := range seen {
		out = append(out, l)
	}
	return out
}

// urls turns locs into sorted canonical URL strings given the hosts' bases.
func urls(ls []loc, bases []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = bases[l.h] + l.pathq
	}
	sort.Strings(out)
	return out
}
