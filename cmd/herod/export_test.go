package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/node"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// makeData creates a node data directory whose archive holds 3 URLs of
// a.example and 2 of b.example, each captured on 3 days with 2 distinct
// payloads (so 2 versions each), and returns it.
func makeData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, u := range []string{"http://a.example/", "http://a.example/x", "http://a.example/y", "http://b.example/", "http://b.example/z"} {
		for d := 0; d < 3; d++ {
			c := archive.Capture{
				URL: u, Time: t0.Add(time.Duration(d) * 24 * time.Hour), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}},
				Body:   []byte(fmt.Sprintf("<html>%s rev %d</html>", u, min(d, 1))),
			}
			if _, _, err := s.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// records reads a .warc.gz and returns each record's type, URI and date,
// the warcinfo record aside.
func records(t *testing.T, data []byte) []string {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	var out []string
	for {
		rec, err := archive.ReadRecord(br)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("record %d: %v", len(out), err)
		}
		if rec.Header.Get("Warc-Type") == "warcinfo" {
			continue
		}
		out = append(out, rec.Header.Get("Warc-Type")+" "+rec.Header.Get("Warc-Target-Uri")+" "+rec.Header.Get("Warc-Date"))
	}
}

// withoutInfo returns a .warc.gz stream without its warcinfo records,
// which name the time and the source of each export.
func withoutInfo(t *testing.T, data []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := exchange.Records(bytes.NewReader(data), func(m *exchange.Member) error {
		if m.Type() != "warcinfo" {
			out.Write(m.Raw)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// firstRecord returns the first record of a .warc.gz stream.
func firstRecord(t *testing.T, data []byte) *archive.Record {
	t.Helper()
	var first *archive.Record
	if err := exchange.Records(bytes.NewReader(data), func(m *exchange.Member) error {
		if first == nil {
			first = m.Record
		}
		return nil
	}); err != nil || first == nil {
		t.Fatalf("no first record: %v", err)
	}
	return first
}

func run(t *testing.T, cmd func(context.Context, []string, io.Writer, io.Writer) error, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cmd(context.Background(), args, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestExportData(t *testing.T) {
	data := makeData(t)
	dir := t.TempDir()
	tests := []struct {
		name  string
		args  []string
		want  int // records
		cdx   bool
		first string
	}{
		{"host", []string{"--host", "a.example"}, 6, true, "response http://a.example/ 2026-03-01T12:00:00Z"},
		{"host url form", []string{"--host", "http://b.example/"}, 4, false, "response http://b.example/ 2026-03-01T12:00:00Z"},
		{"prefix", []string{"--prefix", "http://a.example/x"}, 2, false, "response http://a.example/x 2026-03-01T12:00:00Z"},
		{"url", []string{"--url", "http://a.example/y"}, 2, false, "response http://a.example/y 2026-03-01T12:00:00Z"},
		{"date range", []string{"--host", "a.example", "--from", "20260302", "--to", "20260302"}, 3, false, "response http://a.example/ 2026-03-02T12:00:00Z"},
		{"revisits", []string{"--url", "http://a.example/", "--revisits"}, 3, true, "response http://a.example/ 2026-03-01T12:00:00Z"},
		{"all", []string{"--all"}, 10, true, "response http://a.example/ 2026-03-01T12:00:00Z"},
		{"all latest", []string{"--all", "--latest"}, 5, true, "response http://a.example/ 2026-03-02T12:00:00Z"},
		{"domain regex", []string{"--domain", "example", "--regex", ".*/[xz]"}, 4, false, "response http://a.example/x 2026-03-01T12:00:00Z"},
		{"surt type sample", []string{"--surt", "example,b)", "--type", "text/html", "--sample", "100%"}, 4, false, "response http://b.example/ 2026-03-01T12:00:00Z"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprintf("%d.warc.gz", i))
			args := append([]string{"--data", data, "-o", out}, tc.args...)
			cdx := filepath.Join(dir, fmt.Sprintf("%d.cdxj", i))
			if tc.cdx {
				args = append(args, "--cdx", cdx)
			}
			msg, err := run(t, exportCmd, args...)
			if err != nil {
				t.Fatalf("export: %v\n%s", err, msg)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			recs := records(t, b)
			if len(recs) != tc.want || recs[0] != tc.first {
				t.Fatalf("got %d records starting %q, want %d starting %q", len(recs), recs[0], tc.want, tc.first)
			}
			if info := firstRecord(t, b); info.Header.Get("Warc-Type") != "warcinfo" || info.Header.Get("Warc-Filename") != filepath.Base(out) ||
				!bytes.Contains(info.Block, []byte("isPartOf: herod export "+strings.Join(tc.args[:min(2, len(tc.args))], " "))) {
				t.Errorf("first record %v\n%s: want the warcinfo record of the export", info.Header, info.Block)
			}
			if tc.cdx {
				c, err := os.ReadFile(cdx)
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(string(c), "\n"); n != tc.want {
					t.Fatalf("cdxj has %d lines, want %d", n, tc.want)
				}
				checkCDXJ(t, c, b)
			}
		})
	}
}

func TestExportFlags(t *testing.T) {
	data := makeData(t)
	tests := [][]string{
		{"--host", "a.example"}, // no source
		{"--data", data, "--node", "http://127.0.0.1:1/", "--host", "a.example"}, // two sources
		{"--data", data}, // no selection
		{"--data", data, "--host", "a.example", "--url", "http://a.example/"},
		{"--data", data, "--host", "a.example", "--from", "2026x"},
		{"--data", data, "--host", "a.example", "--resume", "not a cursor", "-o", "x"},
		{"--data", data, "--host", "a.example", "--resume", "http://a.example/ 20260301120000"}, // stdout
		{"--data", data, "--all", "--host", "a.example"},
		{"--data", data, "--all", "--part", "5/4"},
		{"--data", data, "--all", "--regex", "("},
		{"--data", data, "--all", "--latest", "--revisits"},
	}
	for _, args := range tests {
		if msg, err := run(t, exportCmd, args...); !errors.Is(err, errUsage) {
			t.Errorf("export %q: err %v, want usage error\n%s", args, err, msg)
		}
	}
	if _, err := run(t, exportCmd, "--data", t.TempDir(), "--host", "a.example", "-o", filepath.Join(t.TempDir(), "o.warc.gz")); err == nil {
		t.Error("export of a directory without an archive succeeded")
	}
}

// checkCDXJ checks that every CDXJ line's offset and length locate its
// record in warc, the warcinfo record before them all.
func checkCDXJ(t *testing.T, cdxj, warc []byte) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(string(cdxj)), "\n") {
		parts := strings.SplitN(l, " ", 3)
		var f struct {
			URL    string `json:"url"`
			Offset any    `json:"offset"`
			Length any    `json:"length"`
		}
		if len(parts) != 3 || json.Unmarshal([]byte(parts[2]), &f) != nil {
			t.Fatalf("cdxj line %q", l)
		}
		off, _ := strconv.Atoi(fmt.Sprint(f.Offset))
		n, _ := strconv.Atoi(fmt.Sprint(f.Length))
		if off <= 0 || off+n > len(warc) {
			t.Fatalf("cdxj line %q: outside the %d-byte WARC (or at the warcinfo record)", l, len(warc))
		}
		var u string
		if err := exchange.Records(bytes.NewReader(warc[off:off+n]), func(m *exchange.Member) error { u = m.URL(); return nil }); err != nil || u != f.URL {
			t.Errorf("cdxj line %q: record %q at its location (%v)", l, u, err)
		}
	}
}

// storeArchive serves a store through the gateway, as a node does, and
// can break its export stream after a number of records.
type storeArchive struct {
	s         *archive.Store
	failAfter int // records written before the stream fails; <= 0: never
}

func (a *storeArchive) Versions(ctx context.Context, u string) ([]archive.Version, error) {
	return a.s.Versions(ctx, u)
}

func (a *storeArchive) Get(ctx context.Context, u string, t time.Time) (archive.Version, *archive.Capture, error) {
	v, err := a.s.At(ctx, u, t)
	if err != nil {
		return v, nil, err
	}
	c, err := a.s.Read(ctx, v)
	return v, c, err
}

func (a *storeArchive) Export(ctx context.Context, q cdx.Query, w io.Writer, after string) error {
	aq := q.Store()
	if a.failAfter > 0 {
		w = &failingWriter{w: w, left: a.failAfter}
	}
	_, err := a.s.Export(ctx, archive.ExportOptions{Query: aq, Revisits: q.Revisits, After: after}, w, nil)
	return err
}

type failingWriter struct {
	w    io.Writer
	left int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.left < 0 {
		return 0, errors.New("member went away")
	}
	if f.left--; f.left == 0 {
		f.left = -1
	}
	return f.w.Write(p)
}

// TestExportGatewayRevisits: --revisits through a gateway gives the same
// file as from disk, revisit records included.
func TestExportGatewayRevisits(t *testing.T) {
	data := makeData(t)
	dir := t.TempDir()
	disk := filepath.Join(dir, "disk.warc.gz")
	diskIdx := filepath.Join(dir, "disk.cdxj")
	if msg, err := run(t, exportCmd, "--data", data, "--url", "http://a.example/", "--revisits", "-o", disk, "--cdx", diskIdx); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	s, err := archive.Open(filepath.Join(data, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gw, err := gateway.New(gateway.Config{Archive: &storeArchive{s: s}, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	ring := filepath.Join(dir, "ring.warc.gz")
	if msg, err := run(t, exportCmd, "--node", srv.URL, "--url", "http://a.example/", "--revisits", "-o", ring, "--cdx", filepath.Join(dir, "ring.cdxj")); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	got, _ := os.ReadFile(ring)
	want, _ := os.ReadFile(disk)
	// The index of the ring-wide file locates its records and says what
	// the index of the same export from disk says, but for the offsets
	// (each file's warcinfo record differs in length).
	ringIdx, _ := os.ReadFile(filepath.Join(dir, "ring.cdxj"))
	checkCDXJ(t, ringIdx, got)
	dIdx, _ := os.ReadFile(diskIdx)
	offsets := regexp.MustCompile(`"offset":"?[0-9]+"?|"filename":"[^"]*"`)
	if a, b := offsets.ReplaceAll(ringIdx, nil), offsets.ReplaceAll(dIdx, nil); !bytes.Equal(a, b) || len(a) == 0 {
		t.Errorf("index through the gateway:\n%s\nfrom disk:\n%s", a, b)
	}
	revisits := 0
	for _, r := range records(t, want) {
		if strings.HasPrefix(r, "revisit ") {
			revisits++
		}
	}
	if revisits == 0 || !bytes.Equal(withoutInfo(t, got), withoutInfo(t, want)) {
		t.Fatalf("through the gateway: %d records; from disk: %d records, %d revisits; want the same bytes, with revisits",
			len(records(t, got)), len(records(t, want)), revisits)
	}
}

// TestExportGatewayResume streams an export through a gateway whose
// archive fails midway: the command keeps the complete records, fails
// with the cursor to resume from, and the resumed run completes the file
// so that it equals an uninterrupted export from disk.
func TestExportGatewayResume(t *testing.T) {
	data := makeData(t)
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.warc.gz")
	if msg, err := run(t, exportCmd, "--data", data, "--host", "a.example", "-o", whole); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	s, err := archive.Open(filepath.Join(data, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := &storeArchive{s: s, failAfter: 4}
	gw, err := gateway.New(gateway.Config{Archive: a, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()

	out := filepath.Join(dir, "ring.warc.gz")
	msg, err := run(t, exportCmd, "--node", srv.URL, "--host", "a.example", "-o", out)
	if err == nil {
		t.Fatalf("interrupted export succeeded:\n%s", msg)
	}
	m := regexp.MustCompile(`resume with --resume "([^"]+)"`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error without a resume cursor: %v", err)
	}
	part, _ := os.ReadFile(out)
	if n := len(records(t, part)); n != 4 {
		t.Fatalf("interrupted file holds %d records, want the 4 complete ones", n)
	}
	a.failAfter = 0
	if msg, err := run(t, exportCmd, "--node", srv.URL, "--host", "a.example", "-o", out, "--resume", m[1]); err != nil {
		t.Fatalf("resume: %v\n%s", err, msg)
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(whole)
	if !bytes.Equal(withoutInfo(t, got), withoutInfo(t, want)) || firstRecord(t, got).Header.Get("Warc-Type") != "warcinfo" {
		t.Fatalf("resumed export (%d records) differs from the whole one (%d), or does not start with its warcinfo record", len(records(t, got)), len(records(t, want)))
	}
}

func TestFsck(t *testing.T) {
	data := makeData(t)
	if msg, err := run(t, fsckCmd, "--data", data); err != nil || !strings.Contains(msg, "fsck: ok: 1 segments, 10 valid versions") {
		t.Fatalf("fsck of a good archive: %v\n%s", err, msg)
	}
	if msg, err := run(t, fsckCmd, "--data", data, "--compact"); err != nil || !strings.Contains(msg, "compact: 1 segments, 0 rewritten, 0 removed") {
		t.Fatalf("fsck --compact of an archive without dead records: %v\n%s", err, msg)
	}
	if _, err := run(t, fsckCmd, "--data", data, "--compact", "--min-dead", "3"); err == nil {
		t.Fatal("fsck --compact --min-dead 3 accepted")
	}
	// Damage the last record of the segment.
	seg := filepath.Join(data, "archive", "segments", archive.SegmentName(1))
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if _, err := f.WriteAt([]byte("not a gzip member"), fi.Size()-20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	msg, err := run(t, fsckCmd, "--data", data)
	if !errors.Is(err, errProblems) || !strings.Contains(msg, "1 damaged extents") || !strings.Contains(msg, "1 missing") {
		t.Fatalf("fsck of a corrupt archive: %v\n%s", err, msg)
	}
	if msg, err := run(t, fsckCmd, "--data", data, "--repair"); err != nil || !strings.Contains(msg, "fsck after repair: ok") {
		t.Fatalf("fsck --repair: %v\n%s", err, msg)
	}
	if msg, err := run(t, fsckCmd, "--data", data); err != nil {
		t.Fatalf("fsck after repair: %v\n%s", err, msg)
	}
	// Damage a record in the middle of the segment: --repair quarantines
	// it and rewrites the segment without it, and fsck ends clean.
	f, err = os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ = f.Stat()
	if _, err := f.WriteAt([]byte("not a gzip member"), fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if msg, err := run(t, fsckCmd, "--data", data); !errors.Is(err, errProblems) || !strings.Contains(msg, "1 damaged extents") {
		t.Fatalf("fsck of a segment damaged in the middle: %v\n%s", err, msg)
	}
	if msg, err := run(t, fsckCmd, "--data", data, "--repair"); err != nil || !strings.Contains(msg, "repair: cut damaged records out of 1 segments") || !strings.Contains(msg, "fsck after repair: ok") {
		t.Fatalf("fsck --repair of a segment damaged in the middle: %v\n%s", err, msg)
	}
	for _, args := range [][]string{{"--data", data}, {"--data", data, "--repair"}, {"--data", data, "--compact"}} {
		if msg, err := run(t, fsckCmd, args...); err != nil || !strings.Contains(msg, "fsck: ok") {
			t.Fatalf("fsck %v after the repair: %v\n%s", args, err, msg)
		}
	}
	if _, err := run(t, fsckCmd, "--data", t.TempDir()); err == nil {
		t.Fatal("fsck of a directory without an archive succeeded")
	}
}

// TestExportRing runs `herod export --node` against a real 2-node ring
// that crawled a small sample web: the file holds every version of the
// host that the two nodes store between them.
func TestExportRing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ring")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	web := sampleweb.New(sampleweb.Config{Hosts: 1, Pages: 40})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	lr, err := startLocalRing(ctx, t.TempDir(), 2, node.Config{
		VirtualServers:    2,
		StabilizeInterval: 100 * time.Millisecond,
		FlushInterval:     20 * time.Millisecond,
		Crawl:             crawl.Config{HostRate: 2000, Concurrency: 8, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.waitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lr.nodes[0].Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.waitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(web.Seeds()[0])
	if err != nil {
		t.Fatal(err)
	}
	// Distinct versions: replication pushes each to the other node too.
	distinct := map[archive.Entry]bool{}
	for _, n := range lr.nodes {
		n.Store().Scan(ctx, archive.Query{Host: u.Host}, func(v archive.Version) error { distinct[v.Entry()] = true; return nil })
	}
	want := len(distinct)
	out := filepath.Join(t.TempDir(), "ring.warc.gz")
	msg, err := run(t, exportCmd, "--node", lr.nodes[1].GatewayURL(), "--host", u.Host, "-o", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	b, _ := os.ReadFile(out)
	// Each response the crawler stored comes with the request it sent.
	got, requests, responses := 0, 0, 0
	for _, r := range records(t, b) {
		switch typ, _, _ := strings.Cut(r, " "); typ {
		case "request":
			requests++
			continue
		case "response":
			responses++
		}
		got++
	}
	if got != want || want < 10 || !strings.Contains(msg, fmt.Sprintf("exported %d records", want)) {
		t.Fatalf("exported %d records (%q), the ring stores %d", got, msg, want)
	}
	if requests != responses {
		t.Errorf("%d request records for %d responses", requests, responses)
	}
}
