package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/links"
)

// TestHostileLinkRecords: a ring member lies to the link index — it
// sends the target's owner a record of a link its source page never
// carried, keeps in its own index (it is one of the target's holders) a
// true link with a text the page never showed, and a link from a page no
// one archived. Every gateway, the liar's included, lists the one true
// link to the target, on /links and in the calendar's panel, and counts
// what it left out (status trust.unverifiedLinks, trust.uncheckedLinks).
func TestHostileLinkRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr := startLinkRing(ctx, t)
	const target = "http://t.test/"
	// Recent captures: every gateway believes their dates (witness rule).
	t0 := time.Now().Add(-2 * time.Minute).UTC() // nanoseconds: a record names its capture exactly
	t1 := t0.Add(time.Minute)
	for _, p := range []struct {
		url  string
		at   time.Time
		body string
	}{
		{target, t0, `<p>the target</p>`},
		{"http://s1.test/", t0, `<a href="http://t.test/">true text</a>`},
		{"http://s1.test/", t1, `<p>again</p><a href="http://t.test/">true text</a>`},
		{"http://s2.test/", t0, `<p>no link to t</p>`},
	} {
		c := archive.Capture{URL: p.url, Time: p.at, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(p.body)}
		if _, _, err := lr.Owner(id.OfString(p.url)).store.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range lr.Nodes {
		if _, err := n.SweepLinks(ctx); err != nil {
			t.Fatal(err)
		}
	}

	owner := lr.Owner(id.OfString(target))
	var liar *Node
	for _, n := range lr.Nodes {
		if n != owner {
			liar = n
			break
		}
	}
	// A link s2 never carried, sent over the wire to the target's owner.
	forged := links.Record{Target: target, Source: "http://s2.test/", Anchor: "forged", From: t0, Seen: t0}
	if err := (&links.Client{Open: liar.openStream}).Put(ctx, owner.self, []links.Record{forged}); err != nil {
		t.Fatal(err)
	}
	// In the liar's own index, which every gateway asks as one of the
	// target's holders: s1's true link with another text, and a link
	// from a page no node archived.
	planted := []links.Record{
		{Target: target, Source: "http://s1.test/", Anchor: "Buy pills", From: t1, Seen: t1},
		{Target: target, Source: "http://s3.test/", Anchor: "nowhere", From: t0, Seen: t0},
	}
	if _, err := liar.linkIdx.index.Put(ctx, planted); err != nil {
		t.Fatal(err)
	}
	if res, err := owner.Links(ctx, target, time.Time{}, 0); err != nil || len(res.Records) != 4 {
		t.Fatalf("the holders list %d records (%v), want the true one and the three lies", len(res.Records), err)
	}

	for i, n := range lr.Nodes {
		var res gateway.LinksAnswer
		getJSON(t, fmt.Sprintf("%slinks?url=%s&output=json", n.GatewayURL(), target), &res)
		got := []string{}
		for _, l := range res.Links {
			got = append(got, l.Source+"|"+l.Anchor)
		}
		if !slices.Equal(got, []string{"http://s1.test/|true text"}) || res.Dropped != 2 || res.Unchecked != 1 {
			t.Errorf("node %d: /links lists %q, dropped %d, unchecked %d; want the true link, 2 dropped, 1 unchecked",
				i, got, res.Dropped, res.Unchecked)
		}
		resp, err := http.Get(n.GatewayURL() + "web/*/" + target)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// As of the target's capture (t0), s1's planted record (from t1)
		// is not live: two lies are left out there.
		b := string(page)
		if !strings.Contains(b, "“true text”") || strings.Contains(b, "s2.test") || strings.Contains(b, "Buy pills") ||
			strings.Contains(b, "s3.test") || !strings.Contains(b, "2 more not shown") {
			t.Errorf("node %d: calendar panel:\n%s", i, b)
		}
		st := n.Status().Trust
		if st.UnverifiedLinks < 2 || st.UncheckedLinks < 1 {
			t.Errorf("node %d: status counts %d unverified, %d unchecked links", i, st.UnverifiedLinks, st.UncheckedLinks)
		}
	}
}
