package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/query"
)

// TestListedByHolders: in a ring of 4 real nodes, a hostile member
// answers ring-wide queries with its own signed capture, dated a minute
// ago, of a URL it does not hold (a row that verifies and is too young to
// need witnesses). An honest gateway's CDX (a host query, paged and not),
// its prefix listing, its List and its export leave it out and count it
// (trust.notHeldRows), while they list the capture the URL's owner holds
// and one that only a replica (the URL's second holder, not its owner)
// lists.
func TestListedByHolders(t *testing.T) {
	if testing.Short() {
		t.Skip("four-node ring: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr := startQueryRing(ctx, t)
	hostile, replica, owner, gw := lr.Nodes[0], lr.Nodes[1], lr.Nodes[2], lr.Nodes[3]
	forgedURL := pickHeld(lr, "forged", 1, func(hs []*Node) bool { return !slices.Contains(hs, hostile) })[0]
	replicaURL := pickHeld(lr, "replica", 1, func(hs []*Node) bool { return hs[1] == replica })[0]
	ownerURL := pickHeld(lr, "owner", 1, func(hs []*Node) bool { return hs[0] == owner })[0]
	capture := pageCapture(time.Now().Add(-time.Minute))
	// The hostile member and the replica answer queries from a store of
	// their own: the made-up capture, signed by the hostile member's key;
	// the replica's capture of its URL, which no other member lists.
	listFrom := func(n *Node, u string) {
		st, err := archive.Open(filepath.Join(t.TempDir(), n.self.Addr), archive.Options{NoSync: true, Signer: n.identity})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if _, _, err := st.Put(ctx, capture(u)); err != nil {
			t.Fatal(err)
		}
		answerQueriesFrom(n, st)
	}
	listFrom(hostile, forgedURL)
	listFrom(replica, replicaURL)
	if _, _, err := owner.store.Put(ctx, capture(ownerURL)); err != nil {
		t.Fatal(err)
	}
	want := []string{ownerURL, replicaURL}
	slices.Sort(want)

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(gw.GatewayURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %.300s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	for _, q := range []string{"", "&limit=10", "&page=0&pageSize=5"} {
		var rows [][]string
		if body := get("cdx?url=h.example&matchType=host&output=json&fl=original,timestamp" + q); json.Unmarshal([]byte(body), &rows) != nil {
			t.Fatalf("cdx%s: %.300q", q, body)
		}
		var got []string
		for _, r := range rows[min(len(rows), 1):] {
			got = append(got, r[0])
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("cdx%s lists %q, want %q", q, got, want)
		}
	}
	prefix := get("web/http://h.example/*")
	if strings.Contains(prefix, forgedURL) || !strings.Contains(prefix, ownerURL) || !strings.Contains(prefix, replicaURL) {
		t.Errorf("prefix listing: forged %v, owner's %v, replica's %v", strings.Contains(prefix, forgedURL),
			strings.Contains(prefix, ownerURL), strings.Contains(prefix, replicaURL))
	}
	vs, err := (*resolver)(gw).List(ctx, cdx.Query{URL: "h.example", Match: cdx.MatchHost})
	var got []string
	for _, v := range vs {
		got = append(got, v.URL)
	}
	slices.Sort(got)
	if err != nil || !slices.Equal(slices.Compact(got), want) {
		t.Errorf("List: %q, %v; want %q", got, err, want)
	}
	var b bytes.Buffer
	if err := (*resolver)(gw).Export(ctx, cdx.Query{URL: "h.example", Match: cdx.MatchHost}, &b, ""); err != nil {
		t.Fatalf("export: %v", err)
	}
	got = got[:0]
	for _, r := range readsExportRecords(t, b.Bytes()) {
		got = append(got, r[0])
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("export holds %q, want %q", got, want)
	}
	if st := gw.Status().Trust; st.NotHeldRows == 0 || st.UnverifiedListings != 0 || st.UnverifiedExports != 0 {
		t.Errorf("gateway's trust counters %+v: want not-held rows counted, none unverified", st)
	}
}

// startQueryRing starts a stable ring of 4 nodes without replication,
// for tests of what a gateway believes of other members' listings.
func startQueryRing(ctx context.Context, t *testing.T) *LocalRing {
	t.Helper()
	lr, err := StartLocalRing(ctx, t.TempDir(), 4, Config{
		VirtualServers:      4,
		StabilizeInterval:   100 * time.Millisecond,
		FlushInterval:       20 * time.Millisecond,
		ReplicationInterval: -1,
		NoSync:              true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.Close() })
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	return lr
}

// pickHeld returns n URLs http://h.example/tag/i whose k holders ok
// accepts.
func pickHeld(lr *LocalRing, tag string, n int, ok func(hs []*Node) bool) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		u := fmt.Sprintf("http://h.example/%s/%d", tag, i)
		if ok(lr.holders(id.OfString(u), ReplicationFactor)) {
			out = append(out, u)
		}
	}
	return out
}

// pageCapture returns a capture of a small page at at (to the second).
func pageCapture(at time.Time) func(u string) archive.Capture {
	at = at.UTC().Truncate(time.Second)
	return func(u string) archive.Capture {
		return archive.Capture{URL: u, Time: at, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>" + u + "</p>")}
	}
}

// answerQueriesFrom has member n answer ring queries from st instead of
// its own store: a member that lists what it likes.
func answerQueriesFrom(n *Node, st *archive.Store) {
	n.kit.Remove(queryProtocol)
	n.kit.MustHandle((&query.Service{Store: st, Self: n.self, Ring: n.ring, Open: n.openStream, Slots: make(chan struct{}, 8)}).Spec())
}
