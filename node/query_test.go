package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/internal/warciotest"
	"github.com/herod-archive/herod/node/export"
	"github.com/herod-archive/herod/node/query"
	"github.com/herod-archive/herod/ring"
)

// TestRingQueryExport is issue 4's ring-wide acceptance test: on a 3-node
// ring that crawled a small sample web, a CDX host query and an /export
// through one node's gateway return exactly the union of what every node
// stores for that host; the export is one valid .warc.gz in global order
// (checked by warcio.js when node and npm are present); resuming from a
// cursor in the middle yields exactly the rest, byte for byte.
func TestRingQueryExport(t *testing.T) {
	// The budget of the whole test, its subtests included (a bound for a
	// hang, not a wait): 25 s alone, 75-235 s under -race at load 20-24,
	// where 60 s ran out in the crawl or before the busy subtest.
	ctx, cancel := dayContext(t, 8*time.Minute)
	defer cancel()

	web, lr := startWebAndRing(ctx, t, 3, sampleweb.Config{Hosts: 2, Pages: 120})
	if err := lr.Nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// Every node enumerates the same three real nodes.
	var peers []string
	for _, n := range lr.Nodes {
		peers = append(peers, n.self.Peer)
	}
	slices.Sort(peers)
	for i, n := range lr.Nodes {
		ms, err := n.query.Members(ctx)
		if err != nil {
			t.Fatalf("node %d members: %v", i, err)
		}
		if got := sortedPeers(ms); !slices.Equal(got, peers) {
			t.Fatalf("node %d members = %v, want %v", i, got, peers)
		}
	}

	host := export.LowerHost(web.Seeds()[0])
	want, holders := unionOf(ctx, t, lr, archive.Query{Host: host})
	if len(want) < 20 || holders < 2 {
		t.Fatalf("host %s: %d versions on %d nodes; the test needs a spread host", host, len(want), holders)
	}

	t.Run("list", func(t *testing.T) {
		got, err := (*resolver)(lr.Nodes[1]).List(ctx, cdx.Query{URL: host, Match: cdx.MatchHost})
		if err != nil {
			t.Fatal(err)
		}
		byCDX := slices.Clone(want)
		slices.SortFunc(byCDX, query.CDXCompare)
		if !slices.EqualFunc(got, byCDX, sameVersion) {
			t.Fatalf("List returned %d versions, want the %d of the union in CDX order", len(got), len(byCDX))
		}
		lim, err := (*resolver)(lr.Nodes[1]).List(ctx, cdx.Query{URL: host, Match: cdx.MatchHost, Limit: 7})
		if err != nil || !slices.EqualFunc(lim, byCDX[:7], sameVersion) {
			t.Fatalf("List with limit 7 = %d versions, %v; want the first 7", len(lim), err)
		}
		// The same through the gateway's CDX API.
		body, _ := httpGet(t, lr.Nodes[0].GatewayURL()+"cdx?output=ndjson&matchType=host&url="+url.QueryEscape("http://"+host+"/"))
		var urls []string
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			var f struct{ URL, Timestamp string }
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("cdx line %q: %v", line, err)
			}
			urls = append(urls, f.URL+" "+f.Timestamp)
		}
		var wantURLs []string
		for _, v := range byCDX {
			wantURLs = append(wantURLs, v.URL+" "+gateway.FormatTimestamp(v.Time))
		}
		if !slices.Equal(urls, wantURLs) {
			t.Fatalf("cdx host query: %d lines, want %d", len(urls), len(wantURLs))
		}
	})

	// The full export, through node 2's gateway.
	gw := lr.Nodes[2].GatewayURL() + "export?host=" + url.QueryEscape("http://"+host+"/")
	start := time.Now()
	full, trailer := httpGet(t, gw)
	t.Logf("host %s: %d versions on %d nodes; ring-wide export of %d bytes in %s",
		host, len(want), holders, len(full), time.Since(start).Round(time.Millisecond))
	if trailer.Get(gateway.TrailerExportStatus) != "complete" {
		t.Fatalf("export status %q: %s", trailer.Get(gateway.TrailerExportStatus), trailer.Get(gateway.TrailerExportError))
	}
	recs := readRecords(t, []byte(full))
	exportOrder := slices.Clone(want)
	slices.SortFunc(exportOrder, func(a, b archive.Version) int { return keyOf(a).Compare(keyOf(b)) })
	if len(recs) != len(exportOrder) {
		t.Fatalf("export has %d records, union has %d versions", len(recs), len(exportOrder))
	}
	for i, v := range exportOrder {
		if recs[i].cursor != archive.CursorOf(v.URL, v.Time, v.Digest).String() {
			t.Fatalf("record %d is %s, want %s", i, recs[i].cursor, archive.CursorOf(v.URL, v.Time, v.Digest).String())
		}
	}
	if got := trailer.Get(gateway.TrailerExportCursor); got != recs[len(recs)-1].cursor {
		t.Fatalf("cursor trailer %q, want the last record's %q", got, recs[len(recs)-1].cursor)
	}

	t.Run("resume", func(t *testing.T) {
		for _, i := range []int{0, len(recs) / 2, len(recs) - 1} {
			rest, tr := httpGet(t, gw+"&after="+url.QueryEscape(recs[i].cursor))
			if tr.Get(gateway.TrailerExportStatus) != "complete" {
				t.Fatalf("resume after %d: status %q", i, tr.Get(gateway.TrailerExportStatus))
			}
			if rest != full[recs[i].end:] {
				t.Fatalf("resume after record %d: %d bytes, want the %d after it", i, len(rest), len(full)-recs[i].end)
			}
		}
		// The coarse Wayback cursor skips the whole second of its URL.
		r := recs[len(recs)/2]
		rest, _ := httpGet(t, gw+"&after="+url.QueryEscape(archive.WaybackCursor(r.url, r.time)))
		j := len(recs) / 2
		for j+1 < len(recs) && recs[j+1].url == r.url && recs[j+1].time.Truncate(time.Second).Equal(r.time.Truncate(time.Second)) {
			j++
		}
		if rest != full[recs[j].end:] {
			t.Fatalf("resume after a Wayback cursor: %d bytes, want %d", len(rest), len(full)-recs[j].end)
		}
	})

	t.Run("warcio", func(t *testing.T) { validateWarcio(t, []byte(full), len(recs), 0) })

	// With revisits=1 the stream also holds a revisit record for each day
	// a URL was checked unchanged, after that URL's responses; warcio
	// reads it and resuming after a revisit gives exactly the rest.
	t.Run("revisits", func(t *testing.T) {
		touched := map[string]int{}
		for _, v := range exportOrder[:min(3, len(exportOrder))] {
			if touched[v.URL] > 0 {
				continue
			}
			for _, nd := range lr.Nodes {
				if vs, err := nd.store.Versions(ctx, v.URL); err != nil || len(vs) == 0 {
					continue
				}
				for d := 1; d <= 2; d++ {
					if err := nd.store.Touch(ctx, v.URL, v.Time.Add(time.Duration(d)*24*time.Hour)); err != nil {
						t.Fatal(err)
					}
				}
				touched[v.URL] = 2
				break
			}
		}
		data, tr := httpGet(t, gw+"&revisits=1")
		if tr.Get(gateway.TrailerExportStatus) != "complete" {
			t.Fatalf("export with revisits: status %q: %s", tr.Get(gateway.TrailerExportStatus), tr.Get(gateway.TrailerExportError))
		}
		got := readRecords(t, []byte(data))
		revisits := map[string]int{}
		for i, r := range got {
			if r.typ != "revisit" {
				continue
			}
			revisits[r.url]++
			if i == 0 || got[i-1].url != r.url || !got[i-1].time.Before(r.time) {
				t.Fatalf("revisit %d of %s does not follow its URL's earlier records", i, r.url)
			}
		}
		checks := 0
		for _, n := range touched {
			checks += n
		}
		if !maps.Equal(revisits, touched) || len(got) != len(recs)+checks {
			t.Fatalf("export with revisits: %d records, revisits %v; want %d + %d, revisits %v", len(got), revisits, len(recs), checks, touched)
		}
		if plain, _ := httpGet(t, gw); withoutInfo(t, plain) != withoutInfo(t, full) {
			t.Fatal("the export without revisits=1 changed after the checks")
		}
		for i, r := range got {
			if r.typ != "revisit" {
				continue
			}
			rest, _ := httpGet(t, gw+"&revisits=1&after="+url.QueryEscape(r.cursor))
			if rest != data[r.end:] {
				t.Fatalf("resume after revisit %d: %d bytes, want the %d after it", i, len(rest), len(data)-r.end)
			}
			break
		}
		validateWarcio(t, []byte(data), len(got), checks)
	})

	// Members over their serving limit refuse, and the refusal reaches
	// the caller.
	t.Run("busy", func(t *testing.T) {
		for range query.MaxServing {
			querySlots <- struct{}{}
		}
		defer func() {
			for range query.MaxServing {
				<-querySlots
			}
		}()
		_, err := (*resolver)(lr.Nodes[0]).List(ctx, cdx.Query{URL: host, Match: cdx.MatchHost})
		if !errors.Is(err, query.ErrPartial) || !strings.Contains(err.Error(), query.BusyError) {
			t.Fatalf("List with busy members: %v", err)
		}
		err = (*resolver)(lr.Nodes[0]).Export(ctx, cdx.Query{URL: host, Match: cdx.MatchHost}, io.Discard, "")
		if !errors.Is(err, query.ErrPartial) || !strings.Contains(err.Error(), query.BusyError) {
			t.Fatalf("Export with busy members: %v", err)
		}
	})

	// One member's streams hold at most a quarter of the process's
	// serving slots (the kit's per-member bound, TestKitPerPeerShare):
	// its slow exports cannot hold them all.
	t.Run("member share", func(t *testing.T) {
		sp, ok := lr.Nodes[1].kit.Limits(queryProtocol)
		if !ok {
			t.Fatal("query protocol not registered")
		}
		if sp.MaxPerPeer != query.MaxPerMember || 4*sp.MaxPerPeer > query.MaxServing {
			t.Fatalf("one member runs %d query handlers at once, want %d (a quarter of %d slots)", sp.MaxPerPeer, query.MaxPerMember, query.MaxServing)
		}
	})

	// A member that cannot answer makes the query fail, naming it, rather
	// than silently return part of the host.
	t.Run("member down", func(t *testing.T) {
		down := lr.Nodes[2]
		down.kit.Remove(queryProtocol)
		defer down.kit.MustHandle(down.query.Spec())
		_, err := (*resolver)(lr.Nodes[0]).List(ctx, cdx.Query{URL: host, Match: cdx.MatchHost})
		if !errors.Is(err, query.ErrPartial) || !strings.Contains(err.Error(), down.self.Addr) {
			t.Fatalf("List with a member down: %v, want a partial error naming %s", err, down.self.Addr)
		}
		var sink bytes.Buffer
		err = (*resolver)(lr.Nodes[0]).Export(ctx, cdx.Query{URL: host, Match: cdx.MatchHost}, &sink, "")
		if !errors.Is(err, query.ErrPartial) || sink.Len() != 0 {
			t.Fatalf("Export with a member down: %v after %d bytes, want a partial error before any", err, sink.Len())
		}
		for _, u := range []string{
			lr.Nodes[0].GatewayURL() + "cdx?matchType=host&url=" + url.QueryEscape("http://"+host+"/"),
			lr.Nodes[0].GatewayURL() + "export?host=" + url.QueryEscape("http://"+host+"/"),
		} {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("GET %s with a member down: %s, want 502", u, resp.Status)
			}
		}
	})
}

// sameVersion compares the fields a query returns.
func sameVersion(a, b archive.Version) bool {
	return a.URL == b.URL && a.Time.Equal(b.Time) && a.Digest == b.Digest && a.Key == b.Key &&
		a.Status == b.Status && a.Length == b.Length && a.Entry() == b.Entry()
}

func keyOf(v archive.Version) archive.Cursor {
	return archive.CursorOf(v.URL, v.Time, v.Digest)
}

// unionOf returns every version selected by q on every node of lr, once
// each (replication copies versions to other nodes), and how many nodes
// hold at least one.
func unionOf(ctx context.Context, t *testing.T, lr *LocalRing, q archive.Query) ([]archive.Version, int) {
	t.Helper()
	var all []archive.Version
	seen := map[archive.Cursor]bool{}
	holders := 0
	for _, n := range lr.Nodes {
		held := false
		if err := n.store.Scan(ctx, q, func(v archive.Version) error {
			held = true
			if k := keyOf(v); !seen[k] {
				seen[k] = true
				all = append(all, v)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if held {
			holders++
		}
	}
	return all, holders
}

// httpGet fetches u, failing the test unless it answers 200, and returns
// the body and the trailer.
func httpGet(t *testing.T, u string) (string, http.Header) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", u, resp.Status, b)
	}
	return string(b), resp.Trailer
}

// exportedRecord is one record of an export stream, as read back.
type exportedRecord struct {
	url, cursor string
	typ         string // WARC-Type
	time        time.Time
	end         int // offset just after its gzip member
}

// readRecords splits a .warc.gz into its gzip members and reads each
// member's WARC record with the archive's reader.
func readRecords(t *testing.T, data []byte) []exportedRecord {
	t.Helper()
	rd := bytes.NewReader(data)
	var out []exportedRecord
	request := "" // the WARC-Concurrent-To of a request record just read
	for rd.Len() > 0 {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			t.Fatalf("record %d: %v", len(out), err)
		}
		zr.Multistream(false)
		rec, err := archive.ReadRecord(bufio.NewReader(zr))
		if err != nil {
			t.Fatalf("record %d: %v", len(out), err)
		}
		if _, err := io.Copy(io.Discard, zr); err != nil {
			t.Fatal(err)
		}
		if rec.Header.Get("Warc-Type") == "warcinfo" {
			if len(out) > 0 {
				t.Fatalf("a warcinfo record after %d records", len(out))
			}
			continue // the file's own description, first
		}
		if rec.Header.Get("Warc-Type") == "request" {
			// the request the fetcher sent, just before its response
			if request != "" || rec.Header.Get("Warc-Concurrent-To") == "" {
				t.Fatalf("record %d: a request record without its response", len(out))
			}
			request = rec.Header.Get("Warc-Concurrent-To")
			continue
		}
		if request != "" && (rec.Header.Get("Warc-Type") != "response" || rec.Header.Get("Warc-Record-Id") != request) {
			t.Fatalf("record %d: a request record for %s, followed by %s %s", len(out), request, rec.Header.Get("Warc-Type"), rec.Header.Get("Warc-Record-Id"))
		}
		request = ""
		when, err := time.Parse(time.RFC3339Nano, rec.Header.Get("Warc-Date"))
		if err != nil {
			t.Fatal(err)
		}
		u := rec.Header.Get("Warc-Target-Uri")
		d, err := digestOf(rec.Header.Get("Warc-Payload-Digest"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, exportedRecord{url: u, typ: rec.Header.Get("Warc-Type"), time: when, cursor: u + " " + when.Format(time.RFC3339Nano) + " " + d, end: len(data) - rd.Len()})
	}
	if request != "" {
		t.Fatalf("the export ends with a request record")
	}
	return out
}

// digestOf turns "sha1:BASE32" into hex.
func digestOf(v string) (string, error) {
	_, val, ok := strings.Cut(v, ":")
	b, err := base32.StdEncoding.DecodeString(val)
	if !ok || err != nil || len(b) != 20 {
		return "", fmt.Errorf("bad digest %q", v)
	}
	return fmt.Sprintf("%x", b), nil
}

// validateWarcio checks an export with warcio.js (internal/warciotest),
// as archive's TestExportWarcio does: it must hold records records,
// revisits of them revisit records, and no error.
func validateWarcio(t *testing.T, data []byte, records, revisits int) {
	warcio := warciotest.Setup(t)
	path := filepath.Join(t.TempDir(), "ring.warc.gz")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	info := 0
	if len(withoutInfo(t, string(data))) < len(data) {
		info = 1 // the warcinfo record the gateway's export starts with
	}
	sum := warcio.Validate(t, path)
	// Each response the crawler stored comes with the request it sent.
	if sum.Records != records+info+sum.Requests || sum.Responses != records-revisits || sum.Revisits != revisits ||
		sum.Requests != sum.Responses || len(sum.Errors) != 0 {
		t.Fatalf("warcio saw %+v, want %d records, %d of them revisits, a request record for each response, and %d warcinfo", sum, records, revisits, info)
	}
}

// withoutInfo returns an exported WARC stream without the warcinfo record
// it starts with, if any (its record ID and date differ between exports).
func withoutInfo(t *testing.T, data string) string {
	t.Helper()
	rd := strings.NewReader(data)
	zr, err := gzip.NewReader(rd)
	if err != nil {
		return data
	}
	zr.Multistream(false)
	rec, err := archive.ReadRecord(bufio.NewReader(zr))
	if err != nil || rec.Header.Get("Warc-Type") != "warcinfo" {
		return data
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		t.Fatal(err)
	}
	return data[len(data)-rd.Len():]
}

// sortedPeers returns the peer ids of cs in order, for tests.
func sortedPeers(cs []ring.Contact) []string {
	ps := make([]string, len(cs))
	for i, c := range cs {
		ps[i] = c.Peer
	}
	slices.Sort(ps)
	return ps
}
