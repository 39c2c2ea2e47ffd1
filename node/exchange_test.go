package node

import (
	"archive/zip"
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/node/export"
	"github.com/herod-archive/herod/node/query"
)

// TestRingExchange runs the researcher-facing exports on a ring of four
// nodes: CDX paging with resumeKey, a WACZ of a host, and an interrupted
// and resumed version stream.
func TestRingExchange(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the four-node ring")
	}
	ctx, cancel := dayContext(t, 90*time.Second)
	defer cancel()
	web, lr := startWebAndRing(ctx, t, 4, sampleweb.Config{Hosts: 2, Pages: 80})
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	host := export.LowerHost(web.Seeds()[0])
	want, holders := unionOf(ctx, t, lr, archive.Query{Host: host})
	if len(want) < 20 || holders < 2 {
		t.Fatalf("host %s: %d versions on %d nodes; the test needs a spread host", host, len(want), holders)
	}
	byCDX := slices.Clone(want)
	slices.SortFunc(byCDX, query.CDXCompare)
	var wantRows []string
	for _, v := range byCDX {
		wantRows = append(wantRows, v.URL+" "+gateway.FormatTimestamp(v.Time)+" "+v.Digest.String())
	}

	t.Run("cdx-paging", func(t *testing.T) {
		gw := lr.Nodes[3].GatewayURL() + "cdx?url=" + url.QueryEscape(host) + "&matchType=host&output=json&fl=original,timestamp,digest,peer&showResumeKey=true&limit=7"
		var got []string
		peers := map[string]bool{}
		key := ""
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatal("paging does not end")
			}
			u := gw
			if key != "" {
				u += "&resumeKey=" + url.QueryEscape(key)
			}
			body, _ := httpGet(t, u)
			var rows [][]string
			if err := json.Unmarshal([]byte(body), &rows); err != nil {
				t.Fatalf("page %d: %v: %q", pages, err, body)
			}
			key = ""
			if n := len(rows); n >= 2 && len(rows[n-2]) == 0 {
				key, rows = rows[n-1][0], rows[:n-2]
			}
			if len(rows) == 0 || !slices.Equal(rows[0], []string{"original", "timestamp", "digest", "peer"}) {
				t.Fatalf("page %d header %q", pages, rows)
			}
			for _, r := range rows[1:] {
				d, err := base32.StdEncoding.DecodeString(r[2])
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r[0]+" "+r[1]+" "+hex.EncodeToString(d))
				peers[r[3]] = true
			}
			if key == "" {
				break
			}
		}
		if !slices.Equal(got, wantRows) {
			t.Fatalf("paged %d rows, want the %d of the union once each, in CDX order", len(got), len(wantRows))
		}
		for p := range peers {
			if _, err := peer.Decode(p); err != nil {
				t.Errorf("peer field %q: %v", p, err)
			}
		}
	})

	t.Run("wacz", func(t *testing.T) {
		body, tr := httpGet(t, lr.Nodes[1].GatewayURL()+"export?format=wacz&host="+url.QueryEscape(host))
		if tr.Get(gateway.TrailerExportStatus) != "complete" {
			t.Fatalf("wacz export: %q %s", tr.Get(gateway.TrailerExportStatus), tr.Get(gateway.TrailerExportError))
		}
		zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, f := range zr.File {
			if f.Method != zip.Store {
				t.Errorf("%s is not stored", f.Name)
			}
			rc, _ := f.Open()
			files[f.Name], err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := strings.Count(string(files[exchange.IndexPath]), "\n"); n != len(want) {
			t.Errorf("index of %d lines, want %d", n, len(want))
		}
		var dg exchange.Digest
		if err := json.Unmarshal(files[exchange.DigestPath], &dg); err != nil || dg.SignedData == nil {
			t.Fatalf("digest %s: %v", files[exchange.DigestPath], err)
		}
		id, err := peer.Decode(dg.SignedData.Peer)
		if err != nil || dg.SignedData.Peer != lr.Nodes[1].self.Peer {
			t.Fatalf("signed by %q, want node 1 (%v)", dg.SignedData.Peer, err)
		}
		pub, err := id.ExtractPublicKey()
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := base64.StdEncoding.DecodeString(dg.SignedData.Signature)
		if ok, err := pub.Verify([]byte(dg.Hash), sig); !ok || err != nil {
			t.Fatalf("signature does not verify: %v", err)
		}
	})

	t.Run("interrupted-stream", func(t *testing.T) {
		gw := lr.Nodes[2].GatewayURL() + "export?host=" + url.QueryEscape(host)
		full, _ := httpGet(t, gw)
		// The records' cursors; the warcinfo record each fresh stream
		// starts with is dated by its request, so it is left out, and a
		// request record belongs to the response after it: a client
		// resumes after a response, as herod export does.
		cursors := func(dst *[]string) func(*exchange.Member) error {
			return func(m *exchange.Member) error {
				if m.Type() != "warcinfo" && m.Type() != "request" {
					*dst = append(*dst, m.Cursor())
				}
				return nil
			}
		}
		var all []string
		if err := exchange.Records(strings.NewReader(full), cursors(&all)); err != nil {
			t.Fatal(err)
		}
		// Cut the connection in the middle of a record, keep the complete
		// records, resume after the last one: every version once.
		resp, err := http.Get(gw)
		if err != nil {
			t.Fatal(err)
		}
		part := make([]byte, len(full)/2+17)
		if _, err := io.ReadFull(resp.Body, part); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var got []string
		err = exchange.Records(bytes.NewReader(part), cursors(&got))
		if err == nil || len(got) == 0 || len(got) == len(all) {
			t.Fatalf("cut stream: %d of %d records, err %v; want a truncated last record", len(got), len(all), err)
		}
		rest, tr := httpGet(t, gw+"&after="+url.QueryEscape(got[len(got)-1]))
		if tr.Get(gateway.TrailerExportStatus) != "complete" {
			t.Fatalf("resumed: %q", tr.Get(gateway.TrailerExportStatus))
		}
		if err := exchange.Records(strings.NewReader(rest), cursors(&got)); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, all) {
			t.Fatalf("interrupted and resumed: %d records, want the %d of the whole stream once each", len(got), len(all))
		}
		if len(all) != len(want) || len(withoutInfo(t, full)) == len(full) {
			t.Fatalf("stream of %d records, union of %d versions and a warcinfo record first", len(all), len(want))
		}
	})

	t.Run("text-resume", func(t *testing.T) {
		gw := lr.Nodes[0].GatewayURL() + "export?format=text&host=" + url.QueryEscape(host)
		full, tr := httpGet(t, gw)
		if tr.Get(gateway.TrailerExportStatus) != "complete" {
			t.Fatalf("text export: %q", tr.Get(gateway.TrailerExportStatus))
		}
		lines := strings.Split(strings.TrimSpace(full), "\n")
		if len(lines) < 10 {
			t.Fatalf("%d text lines", len(lines))
		}
		var mid exchange.TextLine
		if err := json.Unmarshal([]byte(lines[len(lines)/2]), &mid); err != nil || mid.Text == "" || mid.Cursor == "" {
			t.Fatalf("line %q: %v", lines[len(lines)/2], err)
		}
		rest, _ := httpGet(t, gw+"&after="+url.QueryEscape(mid.Cursor))
		if got := strings.Split(strings.TrimSpace(rest), "\n"); !slices.Equal(got, lines[len(lines)/2+1:]) {
			t.Fatalf("resumed text: %d lines, want the %d after the cursor", len(got), len(lines)-len(lines)/2-1)
		}
	})
}
