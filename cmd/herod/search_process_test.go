package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/search"
)

// processQuery is a query of a process test and the page it must find.
type processQuery struct {
	q      string
	target string
}

// searchOf asks the gateway of p for q and returns the result URLs and
// the time the answer took.
func searchOf(p *proc, q string) ([]string, time.Duration, error) {
	start := time.Now()
	resp, err := http.Get("http://" + p.gateway + "/search?output=json&q=" + url.QueryEscape(q))
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s: %s", resp.Status, b)
	}
	var ans struct {
		Results []struct {
			URL string `json:"url"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, 0, err
	}
	var out []string
	for _, r := range ans.Results {
		out = append(out, r.URL)
	}
	return out, took, nil
}

// indexIdle reports whether every node has indexed what it stored.
func indexIdle(nodes []*proc) bool {
	for _, p := range nodes {
		st, err := status(p)
		if err != nil {
			return false
		}
		var s struct {
			Backlog  int64 `json:"backlog"`
			Backfill bool  `json:"backfill"`
		}
		if json.Unmarshal(st["search"], &s) != nil || s.Backlog > 0 || s.Backfill {
			return false
		}
	}
	return true
}

// rareQueries returns k queries of 1, 2 and 3 words, each made of the
// rarest words of a crawled page (by their count over the pages read),
// with that page as target.
func rareQueries(t *testing.T, urls []string, k int) []processQuery {
	t.Helper()
	df := map[string]int{}
	words := map[string][]string{}
	for _, u := range urls {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d, ok := search.Extract(u, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		if !ok {
			continue
		}
		ws := strings.Fields(d.Title + " " + d.Text)
		words[u] = ws
		seen := map[string]bool{}
		for _, w := range ws {
			for _, term := range search.Terms(w) {
				if !seen[term] {
					seen[term] = true
					df[term]++
				}
			}
		}
	}
	var out []processQuery
	for _, u := range urls {
		ws := words[u]
		if len(ws) < 20 || len(out) == k {
			continue
		}
		rank := func(w string) int {
			ts := search.Terms(w)
			if len(ts) != 1 {
				return 1 << 30
			}
			return df[ts[0]]
		}
		sort.SliceStable(ws, func(a, b int) bool { return rank(ws[a]) < rank(ws[b]) })
		n := 1 + len(out)%3
		var q []string
		for _, w := range ws {
			if len(q) < n && !slices.Contains(q, w) {
				q = append(q, w)
			}
		}
		out = append(out, processQuery{q: strings.Join(q, " "), target: u})
	}
	return out
}

// TestProcessesSearch runs five herod processes over a sample web: once
// it is crawled and indexed, the same queries give the same results from
// every gateway, each finding its page, before and after one node is
// killed -9, and after it and another, stopped by SIGTERM, restart (the
// second's start indexes nothing again: node/search mark.go); it logs
// the query latencies (p50, p99) by number of words.
// Run with HEROD_PROCESS_TESTS=1.
func TestProcessesSearch(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" {
		t.Skipf("runs herod processes for minutes: set %s=1", processTestsEnv)
	}
	ctx := context.Background()
	web := sampleweb.New(sampleweb.Config{Hosts: 3, Pages: 200})
	if err := web.Start(ctx); err != nil {
		t.Skipf("sample web cannot listen on 127.0.0.2-4: %v", err)
	}
	defer web.Close()
	const dayLen = time.Hour
	r := newProcRing(t, dayLen)
	nodes := r.startRing(5)
	first := nodes[0]
	r.seed(first, web.Seeds())
	idleSince := time.Time{}
	testwait.For(t, "the crawl and its indexing", 5*time.Minute, func() bool {
		if len(perURLOnDay(web, dayOf(time.Now(), dayLen), dayLen)) == 0 || !ringIdle(nodes) || !indexIdle(nodes) {
			idleSince = time.Time{}
			return false
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
			return false
		}
		return time.Since(idleSince) > 2*time.Second
	})
	var pages []string
	for _, u := range sortedKeys(perURLOnDay(web, dayOf(time.Now(), dayLen), dayLen)) {
		if !strings.HasSuffix(u, ".png") && !strings.HasSuffix(u, ".gif") && !strings.HasSuffix(u, ".css") && !strings.HasSuffix(u, ".js") && !strings.HasSuffix(u, ".svg") {
			pages = append(pages, u)
		}
	}
	qs := rareQueries(t, pages, 30)
	if len(qs) < 20 {
		t.Fatalf("only %d queries from %d pages", len(qs), len(pages))
	}
	want := map[string][]string{}
	lat := map[int][]time.Duration{}
	found := 0
	for _, q := range qs {
		for i, p := range nodes {
			got, took, err := searchOf(p, q.q)
			if err != nil {
				t.Fatalf("node %d: %q: %v", i, q.q, err)
			}
			lat[len(strings.Fields(q.q))] = append(lat[len(strings.Fields(q.q))], took)
			if i == 0 {
				want[q.q] = got
				if slices.Contains(got, q.target) {
					found++
				}
			} else if !slices.Equal(got, want[q.q]) {
				t.Errorf("node %d: %q gives %v, node 0 %v", i, q.q, got, want[q.q])
			}
		}
	}
	if found < len(qs)*9/10 {
		t.Errorf("%d of %d queries find their page in the top 10", found, len(qs))
	}
	for n := 1; n <= 3; n++ {
		ls := lat[n]
		slices.Sort(ls)
		t.Logf("%d-word queries on 5 processes: p50 %v, p99 %v over %d", n, ls[len(ls)/2].Round(time.Millisecond), ls[len(ls)*99/100].Round(time.Millisecond), len(ls))
	}
	t.Logf("%d of %d queries find their page in the top 10", found, len(qs))
	var sent, indexed int64
	for _, p := range nodes {
		st, err := status(p)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			SentBytes int64 `json:"sentBytes"`
			Indexed   int64 `json:"indexed"`
		}
		if err := json.Unmarshal(st["search"], &s); err != nil {
			t.Fatal(err)
		}
		sent, indexed = sent+s.SentBytes, indexed+s.Indexed
	}
	t.Logf("posting bytes sent to other nodes: %d for %d versions indexed, %d a version", sent, indexed, sent/max(indexed, 1))
	// One node killed -9: the others answer alike once the ring noticed.
	r.remove(nodes[2], syscall.SIGKILL)
	alive := slices.Delete(slices.Clone(nodes), 2, 3)
	start := time.Now()
	testwait.For(t, "the same answers after the kill", 2*time.Minute, func() error { return sameAnswers(alive, qs, want) })
	t.Logf("after the kill -9, every gateway answered as before within %v", time.Since(start).Round(time.Second))

	// Restarts: the node killed -9 left no mark and its start indexes
	// what it owns again; a node stopped by SIGTERM left one, and its
	// start indexes nothing again.
	killed := r.start(nodes[2], first.multiaddr)
	r.remove(nodes[1], syscall.SIGTERM)
	stopped := r.start(nodes[1], first.multiaddr)
	for _, c := range []struct {
		what    string
		p       *proc
		resumed bool
	}{{"after kill -9", killed, false}, {"after SIGTERM", stopped, true}} {
		var s struct {
			Backfilled       bool  `json:"backfilled"`
			Resumed          bool  `json:"resumed"`
			BackfillVersions int64 `json:"backfillVersions"`
			Backlog          int64 `json:"backlog"`
		}
		testwait.For(t, "the backfill "+c.what, 2*time.Minute, func() error {
			st, err := status(c.p)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(st["search"], &s); err != nil {
				return err
			}
			if !s.Backfilled || s.Backlog > 0 {
				return fmt.Errorf("backfilled %v, backlog %d", s.Backfilled, s.Backlog)
			}
			return nil
		})
		t.Logf("start %s: resumed %v, %d versions indexed again", c.what, s.Resumed, s.BackfillVersions)
		if s.Resumed != c.resumed || (s.BackfillVersions == 0) == !c.resumed {
			t.Errorf("start %s: resumed %v, %d versions indexed again; want resumed %v and %s", c.what, s.Resumed, s.BackfillVersions, c.resumed,
				map[bool]string{true: "none", false: "some"}[c.resumed])
		}
	}
	nodes[1], nodes[2] = stopped, killed
	testwait.For(t, "the same answers after the restarts", 2*time.Minute, func() error { return sameAnswers(nodes, qs, want) })
}

// sameAnswers reports the first node whose gateway answers a query
// otherwise than want.
func sameAnswers(nodes []*proc, qs []processQuery, want map[string][]string) error {
	for _, q := range qs {
		for i, p := range nodes {
			got, _, err := searchOf(p, q.q)
			if err != nil {
				return fmt.Errorf("node %d: %q: %v", i, q.q, err)
			}
			if !slices.Equal(got, want[q.q]) {
				return fmt.Errorf("node %d: %q gives %v, before %v", i, q.q, got, want[q.q])
			}
		}
	}
	return nil
}
