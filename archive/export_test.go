package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/internal/warciotest"
)

const day = 24 * time.Hour

// exportStore holds three hosts; each page changes every other day and is
// checked (unchanged) on the days between.
func exportStore(t *testing.T) *Store {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	for _, host := range []string{"a.example", "www.b.example", "c.example:8080"} {
		for p := 0; p < 4; p++ {
			u := fmt.Sprintf("http://%s/dir%d/page?b=2&a=%d", host, p%2, p)
			for d := 0; d < 4; d++ {
				at := t0.Add(time.Duration(d)*day + time.Duration(p)*time.Minute)
				c := capture(u, at, fmt.Sprintf("<html>%s %d rev %d</html>", host, p, d/2))
				if p == 3 {
					c.Status = 404
				}
				mustPut(t, s, c)
			}
		}
	}
	if err := s.Touch(ctx, "http://a.example/dir0/page?b=2&a=0", t0.Add(10*day)); err != nil {
		t.Fatal(err)
	}
	return s
}

// readWARC reads a multi-member .warc.gz with this package's reader.
func readWARC(t *testing.T, data []byte) []*Record {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	var out []*Record
	for {
		rec, err := ReadRecord(br)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

func TestExportSelection(t *testing.T) {
	s := exportStore(t)
	ctx := context.Background()
	cases := []struct {
		name                string
		o                   ExportOptions
		responses, revisits int
	}{
		{"all", ExportOptions{}, 3 * 4 * 2, 0},
		{"all with revisits", ExportOptions{Revisits: true}, 24, 3*4*2 + 1},
		{"host", ExportOptions{Query: Query{Host: "A.example"}, Revisits: true}, 8, 9},
		{"host with port", ExportOptions{Query: Query{Host: "c.example:8080"}}, 8, 0},
		{"prefix", ExportOptions{Query: Query{Prefix: "http://www.b.example/dir1/"}}, 4, 0},
		{"prefix and other host", ExportOptions{Query: Query{Host: "a.example", Prefix: "http://www.b.example/"}}, 0, 0},
		{"date range", ExportOptions{Query: Query{From: t0.Add(day), To: t0.Add(2*day + time.Hour)}, Revisits: true}, 12, 12},
		{"date range cuts", ExportOptions{Query: Query{From: t0.Add(day), To: t0.Add(2 * day)}, Revisits: true}, 3, 12},
		{"host and date", ExportOptions{Query: Query{Host: "a.example", From: t0.Add(9 * day)}, Revisits: true}, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var warc, cdxj bytes.Buffer
			st, err := s.Export(ctx, tc.o, &warc, &cdxj)
			if err != nil {
				t.Fatal(err)
			}
			if st.Responses != tc.responses || st.Revisits != tc.revisits || st.Bytes != int64(warc.Len()) {
				t.Fatalf("stats %+v, want %d responses %d revisits", st, tc.responses, tc.revisits)
			}
			recs := readWARC(t, warc.Bytes())
			lines := strings.Split(strings.TrimSuffix(cdxj.String(), "\n"), "\n")
			if len(recs) != st.Responses+st.Revisits || (len(recs) > 0 && len(lines) != len(recs)) {
				t.Fatalf("%d records, %d cdxj lines", len(recs), len(lines))
			}
			for _, r := range recs {
				if tc.o.Host != "" && hostOf(r.Header.Get("Warc-Target-Uri")) != strings.ToLower(tc.o.Host) {
					t.Fatalf("record of another host: %s", r.Header.Get("Warc-Target-Uri"))
				}
			}
			if !slices.IsSorted(lines) {
				t.Fatal("cdxj not sorted")
			}
		})
	}
}

func TestExportResume(t *testing.T) {
	s := exportStore(t)
	ctx := context.Background()
	var full bytes.Buffer
	var cursors []string
	all, err := s.Export(ctx, ExportOptions{Revisits: true, Progress: func(c string) { cursors = append(cursors, c) }}, &full, nil)
	if err != nil {
		t.Fatal(err)
	}
	fullRecs := readWARC(t, full.Bytes())
	if len(cursors) != len(fullRecs) || cursors[len(cursors)-1] != all.Cursor {
		t.Fatalf("%d cursors for %d records", len(cursors), len(fullRecs))
	}
	for _, cut := range []int{0, 7, len(cursors) - 1} {
		var rest bytes.Buffer
		st, err := s.Export(ctx, ExportOptions{Revisits: true, After: cursors[cut]}, &rest, nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.Cursor != all.Cursor {
			t.Fatalf("resume after %d ends at cursor %q, want %q", cut, st.Cursor, all.Cursor)
		}
		got := readWARC(t, rest.Bytes())
		if len(got) != len(fullRecs)-cut-1 {
			t.Fatalf("resume after %d: %d records, want %d", cut, len(got), len(fullRecs)-cut-1)
		}
		for i, r := range got {
			if want := fullRecs[cut+1+i]; r.Header.Get("Warc-Record-Id") != want.Header.Get("Warc-Record-Id") {
				t.Fatalf("resume after %d: record %d differs", cut, i)
			}
		}
	}
	// The Wayback cursor of record 7 resumes at the same place.
	r7 := fullRecs[7]
	wb, _ := time.Parse(time.RFC3339Nano, r7.Header.Get("Warc-Date"))
	var rest bytes.Buffer
	if _, err := s.Export(ctx, ExportOptions{Revisits: true, After: r7.Header.Get("Warc-Target-Uri") + " " + wb.Format("20060102150405")}, &rest, nil); err != nil {
		t.Fatal(err)
	}
	if got := readWARC(t, rest.Bytes()); len(got) != len(fullRecs)-8 {
		t.Fatalf("wayback cursor: %d records, want %d", len(got), len(fullRecs)-8)
	}
	if _, err := s.Export(ctx, ExportOptions{After: "garbage"}, io.Discard, nil); err == nil {
		t.Fatal("bad cursor accepted")
	}
}

func TestSurt(t *testing.T) {
	cases := map[string]string{
		"http://www.Example.com/a/B?z=1&a=2": "com,example)/a/b?a=2&z=1",
		"https://www2.example.com":           "com,example)/",
		"http://example.com:8080/":           "com,example:8080)/",
		"https://example.com:443/x":          "com,example)/x",
		"ftp://example.com/":                 "ftp://example.com/",
		"http://sub.example.co.uk/p%20q":     "uk,co,example,sub)/p%20q",
	}
	for in, want := range cases {
		if got := Surt(in); got != want {
			t.Errorf("Surt(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExportWarcio validates an export with warcio.js (npm), a WARC
// implementation not written here: its parser must accept every record and
// digest, and its own CDXJ indexer must produce the index Export wrote.
// It skips only when node or npm is missing (or HEROD_SKIP_NODE is set).
func TestExportWarcio(t *testing.T) {
	warcio := warciotest.Setup(t)
	s := exportStore(t)
	dir := t.TempDir()
	warcPath := filepath.Join(dir, "export.warc.gz")
	var warc, cdxj bytes.Buffer
	st, err := s.Export(context.Background(), ExportOptions{Revisits: true, Filename: "export.warc.gz"}, &warc, &cdxj)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(warcPath, warc.Bytes(), 0o644))

	sum := warcio.Validate(t, warcPath)
	if sum.Responses != st.Responses || sum.Revisits != st.Revisits || len(sum.URIs) != 12 || len(sum.Errors) != 0 {
		t.Fatalf("warcio saw %+v, export wrote %+v", sum, st)
	}

	theirs := warcio.CDXIndex(t, dir, "export.warc.gz")
	if a, b := normCDXJ(t, theirs), normCDXJ(t, cdxj.Bytes()); !slices.Equal(a, b) {
		t.Fatalf("CDXJ differs from warcio's:\nwarcio: %s\nherod:  %s", strings.Join(a, "\n        "), strings.Join(b, "\n        "))
	}
}

// normCDXJ parses CDXJ lines and re-renders their JSON with sorted keys,
// dropping null fields, so two writers can be compared.
func normCDXJ(t *testing.T, data []byte) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, " ", 3)
		if len(parts) != 3 {
			t.Fatalf("bad cdxj line %q", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(parts[2]), &m); err != nil {
			t.Fatalf("bad cdxj json %q: %v", line, err)
		}
		for k, v := range m {
			if v == nil {
				delete(m, k)
			}
		}
		js, _ := json.Marshal(m)
		out = append(out, parts[0]+" "+parts[1]+" "+string(js))
	}
	slices.Sort(out)
	return out
}

// failingWriter accepts n bytes, then fails.
type failingWriter struct {
	buf bytes.Buffer
	n   int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.n {
		k := w.n - w.buf.Len()
		w.buf.Write(p[:k])
		return k, io.ErrShortWrite
	}
	return w.buf.Write(p)
}

// TestExportResumeAfterBrokenStream checks that resuming from the cursor an
// interrupted export returns loses nothing: the resumed stream is a suffix
// of the full one that starts no later than where the transfer broke.
func TestExportResumeAfterBrokenStream(t *testing.T) {
	s := exportStore(t)
	ctx := context.Background()
	var full bytes.Buffer
	if _, err := s.Export(ctx, ExportOptions{Revisits: true}, &full, nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, 100, full.Len() / 2, full.Len() - 1} {
		w := &failingWriter{n: k}
		st, err := s.Export(ctx, ExportOptions{Revisits: true}, w, nil)
		if err == nil {
			t.Fatalf("break at %d: no error", k)
		}
		var rest bytes.Buffer
		if _, err := s.Export(ctx, ExportOptions{Revisits: true, After: st.Cursor}, &rest, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(full.Bytes(), rest.Bytes()) || full.Len()-rest.Len() > k {
			t.Fatalf("break at %d: resumed %d of %d bytes", k, rest.Len(), full.Len())
		}
	}
}

// FuzzParseCursor checks that resume cursors, which arrive from HTTP
// clients, never panic the parser and that exact cursors round-trip.
func FuzzParseCursor(f *testing.F) {
	f.Add("http://a.example/ 2026-11-20T10:00:00.123456789Z " + strings.Repeat("ab", 20))
	f.Add("http://a.example/ 20261120100000")
	f.Add(" ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil || c.Digest == maxID {
			return
		}
		c2, err := ParseCursor(c.String())
		if err != nil || c2.Compare(c) != 0 {
			t.Fatalf("cursor %q re-parses as %+v, %v", c.String(), c2, err)
		}
	})
}

// FuzzSurt checks that SURT keys never panic and that their host part is
// lower case (when valid UTF-8) for http(s) URLs.
func FuzzSurt(f *testing.F) {
	f.Add("http://www.Example.com:8080/a?b=1&a=2")
	f.Add("https://[::1]/x")
	f.Fuzz(func(t *testing.T, u string) {
		s := Surt(u)
		host, _, _ := strings.Cut(s, ")")
		if s != u && utf8.ValidString(host) && host != strings.ToLower(host) {
			t.Fatalf("Surt(%q) = %q is not lower case", u, s)
		}
	})
}

// TestExportRevisitProfiles: a day a page was answered 304 (Touch) is
// exported as a server-not-modified revisit with a 304 head, a day it was
// sent again unchanged (Put) as an identical-payload-digest revisit.
func TestExportRevisitProfiles(t *testing.T) {
	s := exportStore(t)
	var out bytes.Buffer
	if _, err := s.Export(context.Background(), ExportOptions{Revisits: true}, &out, nil); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range readWARC(t, out.Bytes()) {
		if r.Header.Get("Warc-Type") != "revisit" {
			continue
		}
		p := r.Header.Get("Warc-Profile")
		counts[p]++
		if p == NotModifiedProfile && !bytes.HasPrefix(r.Block, []byte("HTTP/1.1 304 Not Modified\r\n")) {
			t.Errorf("server-not-modified revisit of %s with head %.60q", r.Header.Get("Warc-Target-Uri"), r.Block)
		}
	}
	if counts[NotModifiedProfile] != 1 || counts[RevisitProfile] == 0 {
		t.Errorf("revisit profiles %v, want 1 server-not-modified (the Touch) and identical-payload-digest for the unchanged Puts", counts)
	}
}
