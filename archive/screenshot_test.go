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
	"time"

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
	diffIndexes(t, without(live, pCrawl, pState, pTouch), without(dumpIndex(t, dir), pCrawl, pState))

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

// TestScreenshotNamesAndChoice: CanonicalURL keys screenshot URLs by
// their canonical page, and ScreenshotOf picks a page version's
// screenshot from its capture time to the next version's.
func TestScreenshotNamesAndChoice(t *testing.T) {
	for in, want := range map[string]string{
		"HTTP://Example.ORG":              "http://example.org/",
		"urn:view:HTTP://Example.ORG/a#x": "urn:view:http://example.org/a",
	} {
		if got, err := CanonicalURL(in); err != nil || got != want {
			t.Errorf("CanonicalURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"urn:view:", "urn:view:ftp://x/", "urn:other:http://x/"} {
		if got, err := CanonicalURL(bad); err == nil {
			t.Errorf("CanonicalURL(%q) = %q, want an error", bad, got)
		}
	}
	at := func(s int) Version { return Version{Time: t0.Add(time.Duration(s) * time.Second)} }
	shots := []Version{at(-5), at(3), at(20), at(40), at(1000)}
	for _, tc := range []struct {
		t, next int
		want    int // index in shots, -1 none
	}{{0, 10, 1}, {3, 10, 1}, {4, 10, -1}, {10, 0, 2}, {41, 0, -1}, {-10, -6, -1}, {800, 0, 4}, {600, 0, -1}} {
		var next time.Time
		if tc.next != 0 {
			next = at(tc.next).Time
		}
		got, ok := ScreenshotOf(shots, at(tc.t).Time, next)
		if want := tc.want; (want < 0) == ok || (ok && !got.Time.Equal(shots[want].Time)) {
			t.Errorf("ScreenshotOf(t=%d, next=%d) = %v %v, want index %d", tc.t, tc.next, got.Time, ok, want)
		}
	}
}

// TestScreenshotTypeAndPurge: a screenshot's type is image/png — Put
// refuses another, and a record whose Content-Type field was changed
// fails to import — and a URL purge of the page takes its screenshot.
func TestScreenshotTypeAndPurge(t *testing.T) {
	ctx := context.Background()
	c := ScreenshotCapture("http://example.org/", t0, pngBytes)
	c.Header.Set("Content-Type", "text/html")
	if _, _, err := openTest(t, Options{}).Put(ctx, c); !errors.Is(err, ErrBadCapture) {
		t.Errorf("put of a text/html screenshot: %v, want ErrBadCapture", err)
	}
	name, raw := putFile(t, newEdSigner(1), ScreenshotCapture("http://example.org/", t0, pngBytes))
	rec := readGzipRecord(t, raw)
	rec.Header.Set("Content-Type", "text/html")
	if _, _, err := openTest(t, Options{Verifier: edVerifier{}}).Import(ctx, name, gzipRecord(t, rec)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("import of a screenshot retyped text/html: %v, want ErrCorrupt", err)
	}

	s := openTest(t, Options{})
	mustPut(t, s, capture("http://example.org/", t0, "<html>page</html>"))
	mustPut(t, s, ScreenshotCapture("http://example.org/", t0, pngBytes))
	n, err := s.PurgeURLs(ctx, URLPurge{ID: "p1", SURT: Surt("http://example.org/"), Exact: true})
	if err != nil || n != 2 {
		t.Fatalf("purge of the page: %d versions, %v; want 2 (page and screenshot)", n, err)
	}
	if _, _, err := s.Put(ctx, ScreenshotCapture("http://example.org/", t0.Add(day), pngBytes)); !errors.Is(err, ErrPurged) {
		t.Errorf("put of a purged page's screenshot: %v, want ErrPurged", err)
	}
}

// TestEncodeRecord: a screenshot read back from a store encodes to a
// record a verifying store imports (its signature and marker intact).
func TestEncodeRecord(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, Options{Signer: newEdSigner(1)})
	v, _ := mustPut(t, src, ScreenshotCapture("http://example.org/", t0, pngBytes))
	_, c, err := src.Get(ctx, v.URL, v.Time)
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeRecord(c)
	if err != nil {
		t.Fatal(err)
	}
	iv, added, err := openTest(t, Options{Verifier: edVerifier{}}).Import(ctx, v.Entry().Name(), data)
	if err != nil || !added || !iv.Browser || iv.Digest != v.Digest {
		t.Fatalf("import of the encoded record: %v, added %v, %+v", err, added, iv)
	}
}

// TestScreenshotURLIsResource: a screenshot's URL holds only resource
// records: Put refuses a response there.
func TestScreenshotURLIsResource(t *testing.T) {
	c := capture(ScreenshotURL("http://example.org/"), t0, "<html>not an image</html>")
	if _, _, err := openTest(t, Options{}).Put(context.Background(), c); !errors.Is(err, ErrBadCapture) {
		t.Errorf("put of a response at a screenshot's URL: %v, want ErrBadCapture", err)
	}
}
