package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/warciotest"
)

// requestStore holds two captures of a page, the first with the request
// head the crawler sent, the second without, and a revisit of the first.
func requestStore(t *testing.T) (*Store, []byte) {
	s := openTest(t, Options{NoSync: true})
	head := []byte("GET /p HTTP/1.1\r\nHost: example.org\r\nUser-Agent: herod\r\nIf-None-Match: \"v0\"\r\n\r\n")
	c := capture("http://example.org/p", t0, "<html>first</html>")
	c.Request = head
	mustPut(t, s, c)
	mustPut(t, s, capture("http://example.org/p", t0.Add(2*day), "<html>second</html>"))
	must(t, s.Touch(context.Background(), "http://example.org/p", t0.Add(day)))
	return s, head
}

// TestExportRequestRecords: a response whose capture carries its request
// head is preceded by a WARC request record of that head, concurrent to
// it; a capture without one, and a revisit, have none. The CDXJ index
// lists the responses and revisits only, at the response's offset, and a
// second export is byte-identical.
func TestExportRequestRecords(t *testing.T) {
	s, head := requestStore(t)
	ctx := context.Background()
	var warc, cdxj bytes.Buffer
	st, err := s.Export(ctx, ExportOptions{Revisits: true}, &warc, &cdxj)
	if err != nil || st.Requests != 1 || st.Responses != 2 || st.Revisits != 1 {
		t.Fatalf("export: %+v, %v; want 1 request, 2 responses, 1 revisit", st, err)
	}
	recs := readWARC(t, warc.Bytes())
	var types []string
	for _, r := range recs {
		types = append(types, r.Header.Get("WARC-Type"))
	}
	if want := []string{"request", "response", "revisit", "response"}; !slices.Equal(types, want) {
		t.Fatalf("record types %v, want %v", types, want)
	}
	req, resp := recs[0].Header, recs[1].Header
	for _, f := range []string{"WARC-Date", "WARC-Target-URI"} {
		if req.Get(f) != resp.Get(f) {
			t.Errorf("request %s %q, response's %q", f, req.Get(f), resp.Get(f))
		}
	}
	switch {
	case req.Get("WARC-Concurrent-To") != resp.Get("WARC-Record-ID"):
		t.Errorf("request concurrent to %q, response is %q", req.Get("WARC-Concurrent-To"), resp.Get("WARC-Record-ID"))
	case req.Get("WARC-Record-ID") != RequestRecordID(resp.Get("WARC-Record-ID")) || req.Get("WARC-Record-ID") == resp.Get("WARC-Record-ID"):
		t.Errorf("request record id %q", req.Get("WARC-Record-ID"))
	case req.Get("Content-Type") != "application/http;msgtype=request":
		t.Errorf("request Content-Type %q", req.Get("Content-Type"))
	case !bytes.Equal(recs[0].Block, head):
		t.Errorf("request block %q, want %q", recs[0].Block, head)
	case req.Get("WARC-Block-Digest") != warcDigest(sha1Of(head)):
		t.Errorf("request block digest %q", req.Get("WARC-Block-Digest"))
	case req.Get("Content-Length") != strconv.Itoa(len(head)):
		t.Errorf("request Content-Length %q", req.Get("Content-Length"))
	case resp.Get(HeaderRequest) == "":
		t.Errorf("response record lost its %s field", HeaderRequest)
	case recs[3].Header.Get(HeaderRequest) != "":
		t.Errorf("the capture without a request head has one")
	}

	// The index lists the three captures; the first at its response.
	lines := strings.Split(strings.TrimSpace(cdxj.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("cdxj has %d lines, want 3:\n%s", len(lines), cdxj.String())
	}
	var first struct{ Offset, Length, Mime string }
	must(t, json.Unmarshal([]byte(lines[0][strings.IndexByte(lines[0], '{'):]), &first))
	off, _ := strconv.Atoi(first.Offset)
	n, _ := strconv.Atoi(first.Length)
	if off == 0 || first.Mime != "text/html" {
		t.Fatalf("first line %+v: want the response, after its request", first)
	}
	if got := readWARC(t, warc.Bytes()[off:off+n]); len(got) != 1 || got[0].Header.Get("WARC-Type") != "response" {
		t.Fatalf("offset %d length %d holds %d records, not the response", off, n, len(got))
	}

	var again bytes.Buffer
	if _, err := s.Export(ctx, ExportOptions{Revisits: true}, &again, nil); err != nil || !bytes.Equal(again.Bytes(), warc.Bytes()) {
		t.Fatalf("second export differs (%v)", err)
	}
}

// TestExportRequestResume: the cursor reported after a response covers its
// request record: an export resumed after the request-less record before
// it writes both, one resumed after the response writes neither.
func TestExportRequestResume(t *testing.T) {
	s, _ := requestStore(t)
	ctx := context.Background()
	var cursors []string
	var all bytes.Buffer
	if _, err := s.Export(ctx, ExportOptions{Progress: func(c string) { cursors = append(cursors, c) }}, &all, nil); err != nil || len(cursors) != 2 {
		t.Fatalf("export: %d cursors, %v", len(cursors), err)
	}
	var rest bytes.Buffer
	st, err := s.Export(ctx, ExportOptions{After: cursors[0]}, &rest, nil)
	if err != nil || st.Requests != 0 || st.Responses != 1 {
		t.Fatalf("resumed after the first response: %+v, %v", st, err)
	}
	if !bytes.HasSuffix(all.Bytes(), rest.Bytes()) || len(readWARC(t, all.Bytes()))-len(readWARC(t, rest.Bytes())) != 2 {
		t.Fatal("resumed export is not the tail after the request and its response")
	}
}

// TestExportRequestWarcio: warcio.js reads the request records, each
// followed by the response it is concurrent to, and its CDXJ indexer
// leaves them out as Export's index does.
func TestExportRequestWarcio(t *testing.T) {
	warcio := warciotest.Setup(t)
	s, _ := requestStore(t)
	dir := t.TempDir()
	var warc, cdxj bytes.Buffer
	st, err := s.Export(context.Background(), ExportOptions{Revisits: true, Filename: "req.warc.gz"}, &warc, &cdxj)
	must(t, err)
	path := filepath.Join(dir, "req.warc.gz")
	must(t, os.WriteFile(path, warc.Bytes(), 0o644))
	sum := warcio.Validate(t, path)
	if sum.Requests != 1 || sum.Responses != st.Responses || sum.Revisits != st.Revisits || len(sum.Errors) != 0 {
		t.Fatalf("warcio saw %+v, export wrote %+v", sum, st)
	}
	theirs := warcio.CDXIndex(t, dir, "req.warc.gz")
	if a, b := normCDXJ(t, theirs), normCDXJ(t, cdxj.Bytes()); !slices.Equal(a, b) {
		t.Fatalf("CDXJ differs from warcio's:\nwarcio: %s\nherod:  %s", strings.Join(a, "\n        "), strings.Join(b, "\n        "))
	}
}
