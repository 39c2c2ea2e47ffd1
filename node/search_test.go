package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// searchRing starts n nodes, stores a corpus's four days at each URL's
// owner (as its crawler would) and waits until every node indexed what it
// was given.
func searchRing(ctx context.Context, t *testing.T, n, pages int) (*LocalRing, *searchtest.Corpus) {
	return searchRingIn(ctx, t, t.TempDir(), n, pages, Config{})
}

// searchRingIn is searchRing with the nodes' directories under dir and
// base's settings.
func searchRingIn(ctx context.Context, t *testing.T, dir string, n, pages int, base Config) (*LocalRing, *searchtest.Corpus) {
	t.Helper()
	base.VirtualServers, base.StabilizeInterval = 2, 100*time.Millisecond
	lr := startStableRing(ctx, t, dir, n, base)
	t.Cleanup(func() { lr.Close() })
	c := searchtest.New(1, pages)
	// Four "days" six hours apart, ending now: within the witness delay,
	// so that every gateway shows the captures.
	c.Step = 6 * time.Hour
	c.Start = time.Now().Add(-3 * c.Step).Truncate(time.Second)
	for d := 1; d <= 4; d++ {
		for i, p := range c.Pages {
			if _, _, err := lr.Owner(id.OfString(p.URL)).store.Put(ctx, c.Capture(i, d)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitIndexed(t, lr)
	return lr, c
}

// waitIndexed waits until no node has a URL waiting to be indexed.
func waitIndexed(t *testing.T, lr *LocalRing) {
	t.Helper()
	testwait.For(t, "every node indexed its versions", time.Minute, func() error {
		for i, n := range lr.Nodes {
			if st := n.SearchStats(); st.Backlog > 0 || st.Backfill {
				return fmt.Errorf("node %d: backlog %d, backfill %v", i, st.Backlog, st.Backfill)
			}
		}
		return nil
	})
	for i, n := range lr.Nodes {
		if st := n.SearchStats(); st.Errors > 0 {
			t.Errorf("node %d: %d indexing errors", i, st.Errors)
		}
	}
}

// searchAt asks node n's gateway for q as of at and returns the URLs.
func searchAt(t *testing.T, n *Node, q string, at time.Time) []string {
	t.Helper()
	u := n.GatewayURL() + "search?output=json&q=" + url.QueryEscape(q) + "&at=" + at.UTC().Format("20060102150405")
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Results []struct {
			URL string `json:"url"`
		} `json:"results"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v %s", u, resp.StatusCode, err, out.Error)
	}
	var urls []string
	for _, r := range out.Results {
		urls = append(urls, r.URL)
	}
	return urls
}

func TestSearchRing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lr, c := searchRing(ctx, t, 4, 120)
	day2 := c.Day(2).Add(time.Hour)
	qs := c.TargetQueries(7, 10)
	// Every term is held by more than one node, and every gateway gives
	// the same answers, each finding its target.
	holders := 0
	for _, n := range lr.Nodes {
		if n.SearchStats().Postings > 0 {
			holders++
		}
	}
	if holders < 3 {
		t.Errorf("postings on %d nodes, want them spread", holders)
	}
	want := map[string][]string{}
	for _, q := range qs {
		want[q.Q] = searchAt(t, lr.Nodes[0], q.Q, day2)
		if !slices.Contains(want[q.Q], q.Target) {
			t.Errorf("%q: %v lacks %s", q.Q, want[q.Q], q.Target)
		}
		for i, n := range lr.Nodes[1:] {
			if got := searchAt(t, n, q.Q, day2); !slices.Equal(got, want[q.Q]) {
				t.Errorf("node %d: %q gives %v, node 0 %v", i+1, q.Q, got, want[q.Q])
			}
		}
	}
	// As of any date.
	if got := searchAt(t, lr.Nodes[1], c.AddedWord, c.Day(1).Add(time.Hour)); len(got) != 0 {
		t.Errorf("added word as of day 1: %v", got)
	}
	if got := searchAt(t, lr.Nodes[2], c.AddedWord, day2); !slices.Equal(got, []string{c.Changed}) {
		t.Errorf("added word as of day 2: %v, want %s", got, c.Changed)
	}
	// Hostile holders: one node drops every posting it holds, another
	// invents postings of every term for every URL. No verified result
	// changes, from any gateway.
	if _, err := lr.Nodes[1].searchStore.DeleteWhere(ctx, func(string, int64) bool { return true }); err != nil {
		t.Fatal(err)
	}
	var invented []search.Posting
	for _, q := range qs {
		for _, term := range search.Terms(q.Q) {
			for _, p := range c.Pages {
				invented = append(invented, search.Posting{Term: term, Key: id.OfString(p.URL), URL: p.URL,
					From: search.Millis(c.Day(1)), To: search.Open, TF: 40, TitleTF: 1, DocLen: 50})
			}
		}
	}
	if err := lr.Nodes[2].searchStore.Put(ctx, invented); err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		for i, n := range lr.Nodes {
			if got := searchAt(t, n, q.Q, day2); !slices.Equal(got, want[q.Q]) {
				t.Errorf("hostile holders: node %d: %q gives %v, want %v", i, q.Q, got, want[q.Q])
			}
		}
	}
}

// TestSearchPage checks the HTML page: the results link into the archive
// at their capture, the snippet marks the words.
func TestSearchPage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr, c := searchRing(ctx, t, 2, 30)
	resp, err := http.Get(lr.Nodes[1].GatewayURL() + "search?q=" + url.QueryEscape(c.AddedWord) + "&at=" + c.Day(2).Add(time.Hour).UTC().Format("20060102150405"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b [1 << 16]byte
	n, _ := io.ReadFull(resp.Body, b[:])
	body := string(b[:n])
	link := fmt.Sprintf(`href="/web/%s/%s"`, c.Day(2).UTC().Format("20060102150405"), c.Changed)
	for _, want := range []string{link, "<mark>" + c.AddedWord + "</mark>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s:\n%s", want, body)
		}
	}
}

// TestSearchPurge: a ring-wide purge order removes the purged page's
// postings from every node, and no gateway finds it any more.
func TestSearchPurge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Node 0 is the ring's purge authority.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "node0"), 0o755); err != nil {
		t.Fatal(err)
	}
	key, err := identity.LoadKey(filepath.Join(dir, "node0"))
	if err != nil {
		t.Fatal(err)
	}
	auth, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	lr, c := searchRingIn(ctx, t, dir, 3, 30, Config{PurgeAuthorities: []string{auth.String()}})
	at := c.Day(2).Add(time.Hour)
	if got := searchAt(t, lr.Nodes[0], c.AddedWord, at); !slices.Equal(got, []string{c.Changed}) {
		t.Fatalf("before the purge: %v", got)
	}
	rule := access.Rule{URL: c.Changed, Exact: true, Action: access.Purge, Reason: "takedown"}
	if err := lr.Nodes[0].access.Add(ctx, rule, true); err != nil {
		t.Fatal(err)
	}
	holds := func(n *Node) bool {
		found := false
		_ = n.searchStore.Range(ctx, id.ID{}, id.ID{}, func(p search.Posting) error {
			found = found || p.URL == c.Changed
			return nil
		})
		return found
	}
	testwait.For(t, "no node holds a posting of the purged page", time.Minute, func() error {
		for i, n := range lr.Nodes {
			if holds(n) {
				return fmt.Errorf("node %d still holds postings of %s (store purges %d, applied %d)", i, c.Changed, len(n.store.URLPurges()), n.access.applied.Load())
			}
		}
		return nil
	})
	for i, n := range lr.Nodes {
		if got := searchAt(t, n, c.AddedWord, at); len(got) != 0 {
			t.Errorf("node %d finds the purged page: %v", i, got)
		}
	}
}
