package archive

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// pngBytes is a stand-in payload: the archive does not look inside it.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 3}, 300)...)

// TestScreenshotRecord: ScreenshotCapture is stored as a WARC resource
// record (no HTTP head, the record's Content-Type image/png, the browser
// marker, a signature) and reads back through Get, OpenBody, ReadFile
// and Import into a verifying store as a 200 image/png capture.
func TestScreenshotRecord(t *testing.T) {
	ctx := context.Background()
	c := ScreenshotCapture("http://example.org/app", t0, pngBytes)
	if c.URL != "urn:view:http://example.org/app" {
		t.Fatalf("URL %q", c.URL)
	}
	if page, ok := ScreenshotPage(c.URL); !ok || page != "http://example.org/app" {
		t.Fatalf("ScreenshotPage: %q %v", page, ok)
	}
	signer := newEdSigner(1)
	src := openTest(t, Options{Signer: signer})
	v, _ := mustPut(t, src, c)
	if v.Status != 200 || v.ContentType != "image/png" || v.Length != int64(len(pngBytes)) {
		t.Fatalf("version %+v", v)
	}
	raw, err := src.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	rec := readGzipRecord(t, raw)
	for k, want := range map[string]string{
		"Warc-Type": "resource", "Content-Type": "image/png", "Warc-Target-Uri": c.URL,
		HeaderBrowser: "1", HeaderPeer: signer.Peer(),
	} {
		if got := rec.Header.Get(k); got != want {
			t.Errorf("field %s = %q, want %q", k, got, want)
		}
	}
	if !bytes.Equal(rec.Block, pngBytes) {
		t.Errorf("block is not the PNG alone (%d bytes, want %d)", len(rec.Block), len(pngBytes))
	}

	dst := openTest(t, Options{Verifier: edVerifier{}})
	iv, added, err := dst.Import(ctx, v.Entry().Name(), raw)
	if err != nil || !added {
		t.Fatalf("import: %v, added %v", err, added)
	}
	for name, s := range map[string]*Store{"put": src, "import": dst} {
		_, got, err := s.Get(ctx, c.URL, t0)
		if err != nil {
			t.Fatalf("%s: get: %v", name, err)
		}
		if !got.Resource || !got.Browser || got.Status != 200 || got.Header.Get("Content-Type") != "image/png" || len(got.Header) != 1 || !bytes.Equal(got.Body, pngBytes) {
			t.Errorf("%s: get: resource %v browser %v status %d header %v, %d bytes", name, got.Resource, got.Browser, got.Status, got.Header, len(got.Body))
		}
		b, err := s.OpenBody(ctx, iv)
		if err != nil {
			t.Fatalf("%s: open body: %v", name, err)
		}
		body, err := io.ReadAll(b)
		b.Close()
		if err != nil || !bytes.Equal(body, pngBytes) || !b.Resource || b.Status != 200 || b.Header.Get("Content-Type") != "image/png" {
			t.Errorf("%s: open body: %v, %d bytes, resource %v, status %d, header %v", name, err, len(body), b.Resource, b.Status, b.Header)
		}
	}

	// A changed byte of the block fails the import.
	bad := readGzipRecord(t, raw)
	bad.Block[len(bad.Block)-1] ^= 1
	if _, _, err := openTest(t, Options{Verifier: edVerifier{}}).Import(ctx, v.Entry().Name(), gzipRecord(t, bad)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("import of a changed screenshot: %v, want ErrCorrupt", err)
	}
}

// TestScreenshotBadCaptures: Put refuses resource captures whose record
// would not read back as given.
func TestScreenshotBadCaptures(t *testing.T) {
	s := openTest(t, Options{})
	for name, edit := range map[string]func(*Capture){
		"status":       func(c *Capture) { c.Status = 404 },
		"other header": func(c *Capture) { c.Header.Set("Etag", `"x"`) },
		"two types":    func(c *Capture) { c.Header.Add("Content-Type", "text/html") },
		"type with LF": func(c *Capture) { c.Header.Set("Content-Type", "image/png\nX-A: b") },
	} {
		c := ScreenshotCapture("http://example.org/", t0, pngBytes)
		edit(&c)
		if _, _, err := s.Put(context.Background(), c); !errors.Is(err, ErrBadCapture) {
			t.Errorf("%s: put: %v, want ErrBadCapture", name, err)
		}
	}
}

// TestScreenshotReindexAndExport: a store holding a screenshot reindexes
// to the same index, and its WARC export holds the resource record, then
// a revisit without an HTTP head for a later identical screenshot.
func TestScreenshotReindexAndExport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, capture("http://example.org/app", t0, "<html>app</html>"))
	mustPut(t, s, ScreenshotCapture("http://example.org/app", t0, pngBytes))
	if _, added := mustPut(t, s, ScreenshotCapture("http://example.org/app", t0.Add(3*day), pngBytes)); added {
		t.Fatal("an identical screenshot was stored again")
	}
	var warc bytes.Buffer
	if _, err := s.Export(ctx, ExportOptions{Revisits: true}, &warc, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	live := dumpIndex(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	if _, err := Reindex(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	diffIndexes(t, without(live, pState, pTouch), without(dumpIndex(t, dir), pState))

	var types []string
	zr, err := gzip.NewReader(&warc)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	for {
		rec, err := ReadRecord(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		typ := rec.Header.Get("Warc-Type")
		if strings.HasPrefix(rec.Header.Get("Warc-Target-Uri"), ScreenshotPrefix) {
			types = append(types, typ)
			if typ == "revisit" && (rec.Header.Get("Content-Type") != "" || len(rec.Block) != 0) {
				t.Errorf("screenshot revisit: Content-Type %q, %d block bytes", rec.Header.Get("Content-Type"), len(rec.Block))
			}
		}
	}
	if strings.Join(types, ",") != "resource,revisit" {
		t.Errorf("screenshot records exported: %v, want resource then revisit", types)
	}
}

// readGzipRecord reads the one record of a gzip member.
func readGzipRecord(t *testing.T, data []byte) *Record {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecord(bufio.NewReader(zr))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// gzipRecord writes rec back as one gzip member.
func gzipRecord(t *testing.T, rec *Record) []byte {
	t.Helper()
	var plain bytes.Buffer
	plain.WriteString(rec.Version + "\r\n")
	for k, vs := range rec.Header {
		if k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			plain.WriteString(k + ": " + v + "\r\n")
		}
	}
	plain.WriteString("Content-Length: " + strconv.Itoa(len(rec.Block)) + "\r\n\r\n")
	plain.Write(rec.Block)
	plain.WriteString("\r\n\r\n")
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(plain.Bytes())
	zw.Close()
	return out.Bytes()
}
