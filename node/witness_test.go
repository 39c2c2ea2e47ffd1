package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// TestBackDatedNotShown: a member signs a capture dated twenty years back
// (and a genuine one beside it) and lets replication carry both to its
// replicas. No honest node's gateway shows the back-dated capture, by its
// archive or over HTTP as of its date, while the genuine one is shown
// everywhere; the replicas keep both records (nothing is deleted), and
// their witness statements date the genuine one only.
func TestBackDatedNotShown(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{VirtualServers: 1, StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: 200 * time.Millisecond, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	liar := lr.Nodes[1]
	var forgedURL, genuineURL string
	for i := 0; forgedURL == "" || genuineURL == ""; i++ {
		u := fmt.Sprintf("http://example.org/p%d", i)
		if lr.Owner(id.OfString(u)) != liar {
			continue
		}
		if forgedURL == "" {
			forgedURL = u
		} else {
			genuineURL = u
		}
	}
	put := func(u string, at time.Time, body string) archive.Version {
		v, _, err := liar.store.Put(ctx, archive.Capture{URL: u, Time: at, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	forged := put(forgedURL, time.Now().AddDate(-20, 0, 0), "<p>made up in 2006</p>")
	genuine := put(genuineURL, time.Now(), "<p>today</p>")

	// Replication brings both to the liar's replicas (k = 3: every other
	// node).
	for _, n := range lr.Nodes {
		if n == liar {
			continue
		}
		for {
			vs, _ := n.store.Versions(ctx, forgedURL)
			gs, _ := n.store.Versions(ctx, genuineURL)
			if len(vs) == 1 && len(gs) == 1 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never received the liar's captures", n.self.Addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if d, _, _ := n.store.Date(ctx, forged, nil); d != archive.Unwitnessed {
			t.Errorf("%s dates the back-dated capture %v", n.self.Addr, d)
		}
		if d, _, _ := n.store.Date(ctx, genuine, nil); d != archive.Witnessed {
			t.Errorf("%s dates the genuine capture %v, want witnessed", n.self.Addr, d)
		}
		gw := n.readerArchive()
		vs, err := gw.Versions(ctx, forgedURL)
		if err != nil || len(vs) != 0 {
			t.Errorf("%s's gateway lists the back-dated capture: %+v, %v", n.self.Addr, vs, err)
		}
		gs, err := gw.Versions(ctx, genuineURL)
		if err != nil || len(gs) != 1 {
			t.Errorf("%s's gateway: genuine capture %+v, %v", n.self.Addr, gs, err)
		}
		for _, c := range []struct {
			url  string
			want int
		}{{forgedURL, http.StatusNotFound}, {genuineURL, http.StatusOK}} {
			resp, err := http.Get(n.ReplayURL() + "web/" + forged.Time.Format("20060102150405") + "id_/" + c.url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s: replay of %s as of 2006: %d %q, want %d", n.self.Addr, c.url, resp.StatusCode, body, c.want)
			}
		}
		// The banner names the fetcher and the witness.
		resp, err := http.Get(n.GatewayURL() + "api/banner?url=" + genuineURL + "&ts=" + genuine.Time.UTC().Format("20060102150405"))
		if err != nil {
			t.Fatal(err)
		}
		banner, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(banner), "fetched by "+liar.self.Peer[:6]) || !strings.Contains(string(banner), "witnessed by") {
			t.Errorf("%s: banner of the genuine capture: %s", n.self.Addr, banner)
		}
		// The CDX lists the genuine capture alone, with its fetcher and
		// the other holders that witnessed it (both replicas: this node's
		// statement and the other's, which came with its row).
		resp, err = http.Get(n.GatewayURL() + "cdx?url=example.org&matchType=host&output=ndjson")
		if err != nil {
			t.Fatal(err)
		}
		cdx, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var row struct {
			URL       string `json:"url"`
			Peer      string `json:"peer"`
			Witnesses []struct{ Peer, Seen string }
		}
		if lines := strings.Split(strings.TrimSpace(string(cdx)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &row) != nil ||
			row.URL != genuineURL || row.Peer != liar.self.Peer || len(row.Witnesses) != 2 ||
			row.Witnesses[0].Peer == liar.self.Peer || row.Witnesses[1].Peer == liar.self.Peer || row.Witnesses[0].Peer == row.Witnesses[1].Peer {
			t.Errorf("%s: cdx of the host: %s", n.self.Addr, cdx)
		}
		if st := n.WitnessStats(); st.Hidden == 0 {
			t.Errorf("%s counts no hidden version: %+v", n.self.Addr, st)
		}
	}
}
