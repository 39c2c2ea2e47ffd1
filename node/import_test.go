package node

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/testwait"
)

// capture expected in the ring after an import: its payload at its
// original date.
type wantCapture struct {
	url  string
	at   time.Time
	body string
}

// importOver posts the file at p to n's /api/import with the admin
// token, and returns the records named as not imported and the report.
func importOver(t *testing.T, n *Node, p string) ([]gateway.ImportLine, map[string]any) {
	t.Helper()
	tok, err := gateway.ReadAdminToken(n.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req, _ := http.NewRequest(http.MethodPost, n.GatewayURL()+"api/import?name="+url.QueryEscape(filepath.Base(p)), f)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("import %s: %s %s", p, resp.Status, b)
	}
	var bad []gateway.ImportLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l struct {
			gateway.ImportLine
			Report map[string]any `json:"report"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		switch {
		case l.Report != nil:
			return bad, l.Report
		case l.Where != "":
			bad = append(bad, l.ImportLine)
		default:
			t.Fatalf("import %s stopped: %s", p, l.Error)
		}
	}
	t.Fatalf("import %s: no report", p)
	return nil, nil
}

// readWARC returns the response, resource and revisit records of a gzip
// WARC as captures (a revisit takes the payload of the record with its
// payload digest), by the archive's reader.
func readWARC(t *testing.T, data []byte) []wantCapture {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	byDigest := map[string]string{}
	var out []wantCapture
	for {
		rec, err := archive.ReadRecord(br)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		typ := rec.Header.Get("Warc-Type")
		at, _ := time.Parse(time.RFC3339Nano, rec.Header.Get("Warc-Date"))
		u := strings.Trim(rec.Header.Get("Warc-Target-Uri"), "<>")
		if !strings.HasPrefix(u, "http") {
			continue // wget's metadata:// resources
		}
		var body string
		switch typ {
		case "response":
			_, rest, ok := bytes.Cut(rec.Block, []byte("\r\n\r\n"))
			if !ok {
				t.Fatalf("response of %s without a head", u)
			}
			body = string(rest)
			byDigest[rec.Header.Get("Warc-Payload-Digest")] = body
		case "resource":
			body = string(rec.Block)
		case "revisit":
			body = byDigest[rec.Header.Get("Warc-Payload-Digest")]
		default:
			continue
		}
		out = append(out, wantCapture{url: u, at: at.UTC(), body: body})
	}
}

// TestImportIntoRing imports a WARC wget wrote, a WARC warcio.js wrote
// (response, resource and revisit records of 2011-2013), a WACZ js-wacz
// packed and an ARC of 2005 through one node's admin endpoint into a
// 3-node ring: every gateway lists each capture at its original date as
// imported, replays its payload, and exports it again with the same
// payload; a copy of the wget WARC with a damaged record, imported first,
// names it and imports the others, and the intact file then adds only
// that record.
func TestImportIntoRing(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	wget, err := exec.LookPath("wget")
	if err != nil {
		t.Skip("wget not installed")
	}
	js := setupJSTools(t)
	dir := t.TempDir()

	// wget's WARC of a small site.
	pages := map[string]string{
		"/":         `<html><a href="/a.html">a</a> <a href="/b.txt">b</a> <img src="/logo.bin"></html>`,
		"/a.html":   `<html><p>page a</p><a href="/">home</a></html>`,
		"/b.txt":    "plain text b\n",
		"/logo.bin": string([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3, 0xff, 0xfe}),
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		io.WriteString(w, body)
	}))
	defer site.Close()
	cmd := exec.Command(wget, "-r", "-l", "2", "-p", "-e", "robots=off", "--no-verbose", "--no-host-directories",
		"-P", filepath.Join(dir, "wget-files"), "--warc-file="+filepath.Join(dir, "site"), site.URL+"/")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wget: %v\n%s", err, out)
	}
	wgetPath := filepath.Join(dir, "site.warc.gz")
	wgetData, err := os.ReadFile(wgetPath)
	if err != nil {
		t.Fatal(err)
	}
	wgetWant := readWARC(t, wgetData)
	if len(wgetWant) != len(pages) {
		t.Fatalf("wget wrote %d responses, want %d", len(wgetWant), len(pages))
	}

	// warcio.js's WARC, and a WACZ of another one by js-wacz.
	digest := func(s string) string { h := sha256.Sum256([]byte(s)); return "sha256:" + hex.EncodeToString(h[:]) }
	html := map[string]string{"Content-Type": "text/html"}
	warcioPath := filepath.Join(dir, "warcio.warc.gz")
	js.writeWARC(t, warcioPath, []warcRec{
		{URL: "http://warcio.example/", Date: "2011-05-06T07:08:09Z", Type: "response", Status: 200, Headers: html, Body: "<p>warcio in 2011</p>"},
		{URL: "http://warcio.example/notes.txt", Date: "2012-01-02T03:04:05Z", Type: "resource", Headers: map[string]string{"Content-Type": "text/plain"}, Body: "a resource record"},
		{URL: "http://warcio.example/", Date: "2013-05-06T07:08:09Z", Type: "revisit", Status: 200, Headers: html,
			RefersToDate: "2011-05-06T07:08:09Z", PayloadDigest: digest("<p>warcio in 2011</p>")},
	})
	srcPath := filepath.Join(dir, "for-wacz.warc.gz")
	js.writeWARC(t, srcPath, []warcRec{
		{URL: "http://wacz.example/", Date: "2016-07-08T09:10:11Z", Type: "response", Status: 200, Headers: html, Body: "<p>a WACZ page</p>"},
		{URL: "http://wacz.example/x.css", Date: "2016-07-08T09:10:12Z", Type: "response", Status: 200, Headers: map[string]string{"Content-Type": "text/css"}, Body: "p{color:red}"},
	})
	waczPath := filepath.Join(dir, "collection.wacz")
	js.wacz(t, srcPath, waczPath)

	want := map[string][]wantCapture{}
	for _, f := range []string{warcioPath, srcPath} {
		data, _ := os.ReadFile(f)
		for _, c := range readWARC(t, data) {
			want[hostOfURL(c.url)] = append(want[hostOfURL(c.url)], c)
		}
	}
	for _, c := range wgetWant {
		want[hostOfURL(c.url)] = append(want[hostOfURL(c.url)], c)
	}
	want["arc.example"] = []wantCapture{
		{"http://arc.example/", time.Date(2005, 6, 14, 7, 1, 59, 0, time.UTC), "<p>an ARC from 2005</p>"},
		{"http://arc.example/logo.txt", time.Date(2005, 6, 14, 7, 2, 1, 0, time.UTC), "logo in 2005"},
	}

	// A copy of wget's WARC whose second response's gzip member is
	// damaged.
	damaged := bytes.Clone(wgetData)
	starts, responses := memberStarts(t, damaged)
	if len(responses) < 2 {
		t.Fatalf("wget's WARC has %d responses", len(responses))
	}
	victim := responses[1]
	hit := starts[victim+1] - 16 // the end of its payload: its header stays legible
	for i := range 8 {
		damaged[hit+int64(i)] ^= 0x55
	}
	damagedPath := filepath.Join(dir, "damaged.warc.gz")
	if err := os.WriteFile(damagedPath, damaged, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lr, err := StartLocalRing(ctx, filepath.Join(dir, "ring"), 3, Config{VirtualServers: 1, StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: 200 * time.Millisecond, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	imp := lr.Nodes[0]

	bad, rep := importOver(t, imp, damagedPath)
	if len(bad) != 1 || bad[0].Where != fmt.Sprintf("offset %d", starts[victim]) || rep["damaged"] != 1.0 ||
		(bad[0].ID == "" && bad[0].URL == "") {
		t.Fatalf("damaged file: named %+v, report %v", bad, rep)
	}
	t.Logf("damaged record named: %+v", bad[0])
	missing := int(rep["records"].(float64)) - int(rep["skipped"].(float64)) - int(rep["damaged"].(float64))
	if int(rep["added"].(float64)) != missing || missing != len(wgetWant)-1 {
		t.Fatalf("damaged file: %v, want %d added", rep, len(wgetWant)-1)
	}
	for _, f := range []struct {
		path  string
		added int
	}{{wgetPath, 1}, {warcioPath, 3}, {waczPath, 2}, {"importer/testdata/sample.arc", 2}} {
		bad, rep := importOver(t, imp, f.path)
		if len(bad) != 0 || int(rep["added"].(float64)) != f.added {
			t.Fatalf("%s: named %+v, report %v, want %d added", f.path, bad, rep, f.added)
		}
		t.Logf("%s: %v", filepath.Base(f.path), rep)
	}

	// The owners push what they imported to their replicas within
	// seconds; wait until every gateway replays every capture.
	err = testwait.Until(time.Minute, func() error {
		for _, n := range lr.Nodes {
			for _, cs := range want {
				for _, c := range cs {
					u := n.ReplayURL() + "web/" + gateway.FormatTimestamp(c.at) + "id_/" + c.url
					resp, err := http.Get(u)
					if err != nil {
						return err
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						return fmt.Errorf("%s: %s", u, resp.Status)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("imported captures not replayed by every gateway: %v", err)
	}
	for _, n := range lr.Nodes {
		for host, cs := range want {
			checkImported(t, n, host, cs, imp.self.Peer)
		}
	}
}

// checkImported checks that n's gateway lists, replays and exports the
// captures cs of host at their original dates, as imported by peer.
func checkImported(t *testing.T, n *Node, host string, cs []wantCapture, peer string) {
	t.Helper()
	body, _ := httpGet(t, n.GatewayURL()+"cdx?url="+url.QueryEscape(host)+"&matchType=host&output=ndjson")
	type row struct {
		URL       string         `json:"url"`
		Timestamp string         `json:"timestamp"`
		Peer      string         `json:"peer"`
		Imported  map[string]any `json:"imported"`
	}
	rows := map[string]row{}
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s: cdx line %q: %v", n.self.Addr, l, err)
		}
		rows[r.URL+" "+r.Timestamp] = r
	}
	if len(rows) != len(cs) {
		t.Errorf("%s: cdx of %s lists %d captures, want %d:\n%s", n.self.Addr, host, len(rows), len(cs), body)
	}
	for _, c := range cs {
		ts := gateway.FormatTimestamp(c.at)
		r, ok := rows[c.url+" "+ts]
		if !ok || r.Imported == nil || r.Peer != peer || !strings.HasPrefix(fmt.Sprint(r.Imported["from"]), "sha256:") {
			t.Errorf("%s: cdx row of %s at %s: %+v (found %v)", n.self.Addr, c.url, ts, r, ok)
		}
		got, _ := httpGet(t, n.ReplayURL()+"web/"+ts+"id_/"+c.url)
		if got != c.body {
			t.Errorf("%s: replay of %s at %s: %q, want %q", n.self.Addr, c.url, ts, got, c.body)
		}
		banner, _ := httpGet(t, n.GatewayURL()+"api/banner?url="+url.QueryEscape(c.url)+"&ts="+ts)
		if !strings.Contains(banner, "imported by "+peer[:6]) || strings.Contains(banner, "fetched by") {
			t.Errorf("%s: banner of %s at %s: %s", n.self.Addr, c.url, ts, banner)
		}
	}
	exported, _ := httpGet(t, n.GatewayURL()+"export?host="+url.QueryEscape(host))
	if zr, err := gzip.NewReader(strings.NewReader(exported)); err == nil {
		plain, _ := io.ReadAll(zr)
		if bytes.Count(plain, []byte(archive.HeaderImportedFrom+": sha256:")) < len(cs) {
			t.Errorf("%s: the export of %s does not carry the import fields", n.self.Addr, host)
		}
	}
	got := map[string]string{}
	for _, c := range readWARC(t, []byte(exported)) {
		got[c.url+" "+gateway.FormatTimestamp(c.at)] = c.body
	}
	for _, c := range cs {
		if b, ok := got[c.url+" "+gateway.FormatTimestamp(c.at)]; !ok || b != c.body {
			t.Errorf("%s: export of %s at %s: %q (found %v), want %q", n.self.Addr, c.url, c.at, b, ok, c.body)
		}
	}
}

func hostOfURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// memberStarts returns the offsets of the gzip members of data, the
// size of data last, and the indexes of those holding a response.
func memberStarts(t *testing.T, data []byte) ([]int64, []int) {
	t.Helper()
	var out []int64
	var responses []int
	br := bytes.NewReader(data)
	for br.Len() > 0 {
		off := int64(len(data) - br.Len())
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(plain, []byte("WARC-Type: response")) {
			responses = append(responses, len(out))
		}
		out = append(out, off)
	}
	return append(out, int64(len(data))), responses
}
