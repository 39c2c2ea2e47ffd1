package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// SearchRow summarizes one class of queries (1, 2 or 3 terms) on one
// ring size.
type SearchRow struct {
	Nodes, PerNode int // real nodes, virtual servers each
	Terms          int
	Queries        int
	// Per query: the median and 99th percentile of hops (summed over its
	// lookups) and of bytes (lookups, posting queries, captures).
	HopsP50, HopsP99   int
	MeanHops           float64
	BytesP50, BytesP99 int
	// Means per query.
	Lookups, Requests        float64
	LookupBytes, VerifyBytes float64
	PostingBytes             float64
	// The walks from each term's owner to its other holders: lookups,
	// hops and bytes a query (included in the figures above).
	WalkLookups, WalkHops, WalkBytes float64
	// Second is the share of queries that asked a term again for the
	// candidates' keys; Verified the mean captures fetched.
	Second, Verified float64
	MaxRequest       int     // largest request frame of any query
	MaxLookupHops    int     // most hops of one lookup
	LookupHopBound   float64 // log2 of the virtual servers: the per-lookup bound checked
}

// SearchReport is the result of RunSearch.
type SearchReport struct {
	Rows      []SearchRow
	Config    SearchConfig // with its defaults filled in
	TotalTime time.Duration
}

// RunSearch builds a ring of each size in sizes (real nodes, virtual
// servers each) and runs cfg's queries on it.
func RunSearch(ctx context.Context, sizes []Size, cfg SearchConfig, sc Config) (SearchReport, error) {
	start := time.Now()
	rep := SearchReport{Config: cfg.withDefaults()}
	for _, sz := range sizes {
		var wc WireCounter
		c := sc
		c.Nodes, c.Vnodes, c.Seed, c.Wrap = sz.nodes(), sz.PerNode, cfg.Seed, wc.Wrap
		s := New(c)
		if err := s.Build(ctx); err != nil {
			return rep, err
		}
		costs, err := s.Search(ctx, cfg, &wc)
		if err != nil {
			return rep, err
		}
		for k, qs := range costs {
			rep.Rows = append(rep.Rows, summarize(sz, k+1, qs))
		}
		s.log.Info("sim: search", "vnodes", sz.Vnodes, "per_node", sz.PerNode, "elapsed", time.Since(start))
	}
	rep.TotalTime = time.Since(start)
	return rep, nil
}

func summarize(sz Size, terms int, qs []QueryCost) SearchRow {
	row := SearchRow{Nodes: sz.nodes(), PerNode: sz.PerNode, Terms: terms, Queries: len(qs),
		LookupHopBound: math.Log2(float64(sz.Vnodes))}
	if len(qs) == 0 {
		return row
	}
	hops := make([]int, len(qs))
	bytes := make([]int, len(qs))
	for i, q := range qs {
		hops[i], bytes[i] = q.Hops, q.Bytes()
		row.MeanHops += float64(q.Hops)
		row.Lookups += float64(q.Lookups)
		row.Requests += float64(q.Requests)
		row.LookupBytes += float64(q.LookupBytes)
		row.PostingBytes += float64(q.PostingBytes)
		row.VerifyBytes += float64(q.VerifyBytes)
		row.WalkLookups += float64(q.WalkLookups)
		row.WalkHops += float64(q.WalkHops)
		row.WalkBytes += float64(q.WalkBytes)
		row.Verified += float64(q.Verified)
		if q.Second > 0 {
			row.Second++
		}
		row.MaxRequest = max(row.MaxRequest, q.MaxRequest)
		row.MaxLookupHops = max(row.MaxLookupHops, q.MaxHops)
	}
	n := float64(len(qs))
	row.Lookups /= n
	row.MeanHops /= n
	row.Requests /= n
	row.LookupBytes /= n
	row.PostingBytes /= n
	row.VerifyBytes /= n
	row.Verified /= n
	row.Second /= n
	row.WalkLookups /= n
	row.WalkHops /= n
	row.WalkBytes /= n
	slices.Sort(hops)
	slices.Sort(bytes)
	row.HopsP50, row.HopsP99 = hops[len(hops)/2], hops[len(hops)*99/100]
	row.BytesP50, row.BytesP99 = bytes[len(bytes)/2], bytes[len(bytes)*99/100]
	return row
}

// Markdown renders the report as the table of docs/search.md.
func (r SearchReport) Markdown() string {
	var b strings.Builder
	m := r.Config.Corpus
	fmt.Fprintf(&b, "Queries of 1, 2, 3 terms (%d each) from random nodes; %d pages a node; terms Zipf s = %.1f over %d (the first %d stop words), %d terms a page; K = %d, %d postings a term, %d results verified.\n\n",
		r.Config.Queries, r.Config.PagesPerNode, m.Zipf, m.Vocabulary, m.StopWords, m.DocTerms, r.Config.K, r.Config.Limit, r.Config.Results)
	b.WriteString("| nodes × vs | terms | hops p50 / p99 | KB p50 / p99 | lookups (walks) | hops (walks) | requests | asked again | KB: lookups / postings / captures | largest request |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Rows {
		fmt.Fprintf(&b, "| %d × %d | %d | %d / %d | %.0f / %.0f | %.1f (%.1f) | %.1f (%.1f) | %.1f | %.0f%% | %.1f / %.0f / %.1f | %.1f KB |\n",
			x.Nodes, x.PerNode, x.Terms, x.HopsP50, x.HopsP99, kb(x.BytesP50), kb(x.BytesP99), x.Lookups, x.WalkLookups,
			x.MeanHops, x.WalkHops, x.Requests, 100*x.Second, x.LookupBytes/1000, x.PostingBytes/1000, x.VerifyBytes/1000, kb(x.MaxRequest))
	}
	fmt.Fprintf(&b, "\nTotal run time %v.\n", r.TotalTime.Round(time.Second))
	return b.String()
}

func kb(n int) float64 { return float64(n) / 1000 }
