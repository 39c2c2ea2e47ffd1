package searchtest

import (
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/herod-archive/herod/search"
)

// TargetQueries returns k queries, each of two or three of its target
// page's rarest words (by document frequency over the day-1 pages), so
// the target is among few matches.
func (c *Corpus) TargetQueries(seed uint64, k int) []Query {
	df := map[string]int{}
	terms := make([][]string, len(c.Pages))
	for i, p := range c.Pages {
		ts := search.Terms(p.Title + " " + p.Body)
		terms[i] = ts
		for _, t := range ts {
			df[t]++
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	var out []Query
	for _, i := range r.Perm(len(c.Pages)) {
		if len(out) == k {
			break
		}
		p := c.Pages[i]
		if p.URL == c.Gone || p.URL == c.Changed {
			continue
		}
		words := strings.Fields(p.Title + " " + p.Body)
		sort.SliceStable(words, func(a, b int) bool { return dfOf(df, words[a]) < dfOf(df, words[b]) })
		n := 2 + len(out)%2
		q := uniq(words, n)
		out = append(out, Query{Q: strings.Join(q, " "), Target: p.URL})
	}
	return out
}

// MixedQueries returns k queries of one to three words drawn from the
// pages with their frequencies: common and rare words alike, as a
// reader's queries are, for comparing rankings.
func (c *Corpus) MixedQueries(seed uint64, k int) []string {
	r := rand.New(rand.NewPCG(seed, 2))
	var out []string
	for len(out) < k {
		p := c.Pages[r.IntN(len(c.Pages))]
		words := strings.Fields(p.Body)
		n := 1 + len(out)%3
		var q []string
		for range n {
			q = append(q, words[r.IntN(len(words))])
		}
		out = append(out, strings.Join(q, " "))
	}
	return out
}

func dfOf(df map[string]int, w string) int {
	ts := search.Terms(w)
	if len(ts) == 0 {
		return 1 << 30
	}
	return df[ts[0]]
}

func uniq(words []string, n int) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		if len(out) == n {
			break
		}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
