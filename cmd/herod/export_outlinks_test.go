package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
)

// TestExportOutlinks: --outlinks from disk writes a metadata record after
// each HTML response; through a gateway whose archive fails midway, the
// command keeps whole response and metadata pairs, and the resumed run
// completes the file to equal the export from disk; --outlinks is refused
// with --cdx and with a format other than WARC.
func TestExportOutlinks(t *testing.T) {
	data := t.TempDir()
	ls, err := archive.Open(filepath.Join(data, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for d := range 2 {
		for i, body := range []string{`<a href="/b">b</a>`, `no links`, `<a href="/c">c</a><a href="/d?%d">d</a>`} {
			c := archive.Capture{URL: "http://a.example/" + string(rune('a'+i)), Time: t0.Add(time.Duration(d) * 24 * time.Hour), Status: 200,
				Header: map[string][]string{"Content-Type": {"text/html"}}, Body: []byte(strings.ReplaceAll(body, "%d", strconv.Itoa(d)))}
			if _, _, err := ls.Put(t.Context(), c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.warc.gz")
	if msg, err := run(t, exportCmd, "--data", data, "--host", "a.example", "--outlinks", "-o", whole); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	want, _ := os.ReadFile(whole)
	types := map[string]int{}
	for _, r := range records(t, want) {
		types[strings.Fields(r)[0]]++
	}
	if types["metadata"] != 3 || types["response"] != 4 {
		// a page without links has no metadata record
		t.Fatalf("records by type %v, want 4 responses and 3 metadata records", types)
	}

	s, err := archive.Open(filepath.Join(data, "archive"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := &storeArchive{s: s, failAfter: 2}
	gw, err := gateway.New(gateway.Config{Archive: a, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	out := filepath.Join(dir, "ring.warc.gz")
	_, err = run(t, exportCmd, "--node", srv.URL, "--host", "a.example", "--outlinks", "-o", out)
	m := regexp.MustCompile(`resume with --resume "([^"]+)"`).FindStringSubmatch(errString(err))
	if m == nil {
		t.Fatalf("interrupted export: %v, want a resume cursor", err)
	}
	a.failAfter = 0
	if msg, err := run(t, exportCmd, "--node", srv.URL, "--host", "a.example", "--outlinks", "-o", out, "--resume", m[1]); err != nil {
		t.Fatalf("resume: %v\n%s", err, msg)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(withoutInfo(t, got), withoutInfo(t, want)) {
		t.Fatalf("resumed export (%d records) differs from the one from disk (%d)", len(records(t, got)), len(records(t, want)))
	}
	for _, args := range [][]string{
		{"--data", data, "--host", "a.example", "--outlinks", "--cdx", filepath.Join(dir, "x.cdxj"), "-o", filepath.Join(dir, "x.warc.gz")},
		{"--data", data, "--host", "a.example", "--outlinks", "--format", "text"},
	} {
		if _, err := run(t, exportCmd, args...); err == nil {
			t.Errorf("export %q succeeded", args)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCopyRecordsOutlinks: a stream of responses and their metadata
// records cut at any byte is copied up to the last response whose
// metadata record, if it has one, came whole; what follows the cursor in
// the whole stream completes it exactly.
func TestCopyRecordsOutlinks(t *testing.T) {
	ctx := t.Context()
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, body := range []string{`<a href="/b">b</a>`, `no links`, `<a href="/c">c</a><a href="/d">d</a>`} {
		c := archive.Capture{URL: "http://o.example/" + string(rune('a'+i)), Time: t0, Status: 200,
			Header: map[string][]string{"Content-Type": {"text/html"}}, Body: []byte(body)}
		if _, _, err := s.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	export := exportAfter(t, s)
	whole := export("", true)
	var all bytes.Buffer
	n, _, err := copyRecords(&all, bytes.NewReader(whole), true, func() bool { return true }, nil, func(string) {})
	if err != nil || n != 3 || !bytes.Equal(all.Bytes(), whole) {
		t.Fatalf("whole stream: %d records, %v", n, err)
	}
	// What follows the cursor is everything after the cursor's record
	// and its metadata.
	checkEveryCut(t, whole, true, export)
}
