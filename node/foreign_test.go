package node

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
)

// TestForeignVersionReachesHolders: a version stored by a node that is
// none of its key's k holders (a crawler that fetched a URL its ring view
// could not place, by a failed lookup or an unknown predecessor) reaches
// its k holders: at once through the push (the node hands it to the
// key's owner), and through rounds when the push never saw it (a full
// push queue, a restart). Rounds alone compare each owner with its
// replicas only, so before hand-offs such a version stayed on the one
// node that is no holder, whatever the number of rounds. The owner holds
// a handed-off record until its own fetch of the URL finds the same
// payload (docs/replication-handoff.md), so the site serves what the
// non-holder stored.
func TestForeignVersionReachesHolders(t *testing.T) {
	if testing.Short() {
		t.Skip("four-node ring: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const body = "<p>stored by a node that holds no copy of it</p>"
	site := servedSite(t, body)
	lr, err := StartLocalRing(ctx, t.TempDir(), 4, Config{
		VirtualServers:      4,
		StabilizeInterval:   100 * time.Millisecond,
		FlushInterval:       20 * time.Millisecond,
		ReplicationInterval: -1, // rounds only when the test runs them
		Crawl:               crawl.Config{HostRate: 1000, AllowPrivate: loopback},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	// The one node of four that holds no copy of a key by its role (k =
	// 3): x, the non-holder of the first URL tried.
	nonHolder := func(u string) (*Node, []*Node) {
		hs := lr.holders(id.OfString(u), ReplicationFactor)
		for _, n := range lr.Nodes {
			if !slices.Contains(hs, n) {
				return n, hs
			}
		}
		t.Fatalf("%s: every node holds it", u)
		return nil, nil
	}
	x, _ := nonHolder(site + "/")
	foreignURL := func(tag string) (string, []*Node) {
		for i := 0; ; i++ {
			u := fmt.Sprintf("%s/%s/%d", site, tag, i)
			if n, hs := nonHolder(u); n == x {
				return u, hs
			}
		}
	}
	put := func(u string) archive.Entry {
		t.Helper()
		v, _, err := x.store.Put(ctx, archive.Capture{URL: u, Time: time.Now(), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return v.Entry()
	}
	missing := func(e archive.Entry, hs []*Node) []string {
		var out []string
		for _, h := range hs {
			if ok, err := h.store.Holds(ctx, e); err != nil || !ok {
				out = append(out, h.self.Addr)
			}
		}
		return out
	}

	// Seen by the push: on its holders within seconds, without a round.
	u, hs := foreignURL("push")
	e := put(u)
	if err := testwait.Until(20*time.Second, func() error {
		if m := missing(e, hs); len(m) > 0 {
			return fmt.Errorf("missing on holders %v", m)
		}
		return nil
	}); err != nil {
		t.Errorf("pushed: %s stored on %s only: %v%s", u, x.self.Addr, err, handOffReport(lr))
	}

	// Never seen by the push: rounds bring it to its holders.
	x.store.OnAdd(nil)
	u, hs = foreignURL("rounds")
	e = put(u)
	for range 3 {
		for _, n := range lr.Nodes {
			if err := n.Replicate(ctx); err != nil {
				t.Fatalf("round: %v", err)
			}
		}
		lr.waitReplicationIdle(ctx, t)
		waitPushIdle(ctx, t, lr)
	}
	// The owner took it into its held area; its fetch releases it.
	if err := testwait.Until(20*time.Second, func() error {
		if m := missing(e, hs); len(m) > 0 {
			return fmt.Errorf("missing on holders %v", m)
		}
		return nil
	}); err != nil {
		t.Errorf("rounds: %s stored on %s only after 3 rounds of every node: %v%s", u, x.self.Addr, err, handOffReport(lr))
	}
	if ok, err := x.store.Holds(ctx, e); err != nil || !ok {
		t.Errorf("the node that stored %s no longer holds it (%v)", u, err)
	}
}

// handOffReport describes each node's replication and hand-off counters.
func handOffReport(lr *LocalRing) string {
	var b strings.Builder
	b.WriteString(lr.replicationReport())
	for _, n := range lr.Nodes {
		st := n.ReplicationStats()
		fmt.Fprintf(&b, "\n  %s: push %+v, hand-off %+v", n.self.Addr, st.Push, st.HandOff)
	}
	return b.String()
}

// servedSite serves body as text/html at every path but /robots.txt (404)
// on a loopback address, and returns its origin.
func servedSite(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
