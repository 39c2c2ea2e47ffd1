package archive

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// goldenCapture is the capture behind testdata/response.warc.
func goldenCapture() *Capture {
	return &Capture{
		URL:    "http://example.com/index.html?q=1",
		Time:   time.Date(2026, 11, 20, 10, 0, 0, 500000000, time.UTC),
		Status: 200,
		Header: http.Header{
			"Content-Type":      {"text/html; charset=utf-8"},
			"Last-Modified":     {"Thu, 19 Nov 2026 08:00:00 GMT"},
			"Etag":              {`"abc"`},
			"Transfer-Encoding": {"chunked"},
			"Set-Cookie":        {"a=1", "b=2"},
		},
		Body: []byte("<!doctype html>\n<title>Example</title>\n<p>Hello, archive.</p>\n"),
	}
}

func rawRecord(t testing.TB, c *Capture) []byte {
	head, block, err := responseBlock(c)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeRecordTo(&b, responseRecord(c, c.Time, id.Sum(c.Body), block), head, c.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGoldenRecord pins the exact bytes of a response record; run with
// -update after an intended format change.
func TestGoldenRecord(t *testing.T) {
	got := rawRecord(t, goldenCapture())
	path := filepath.Join("testdata", "response.warc")
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("record differs from %s:\n%s", path, got)
	}
	rec, err := ReadRecord(bufio.NewReader(bytes.NewReader(want)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := decodeResponse(rec)
	if err != nil {
		t.Fatal(err)
	}
	c := goldenCapture()
	if f.capture.URL != c.URL || !f.capture.Time.Equal(c.Time) || !bytes.Equal(f.capture.Body, c.Body) ||
		!reflect.DeepEqual(f.capture.Header["Set-Cookie"], []string{"a=1", "b=2"}) {
		t.Fatalf("decoded %+v", f.capture)
	}
}

func TestReadRecordErrors(t *testing.T) {
	good := rawRecord(t, goldenCapture())
	cases := map[string][]byte{
		"bad version":       append([]byte("WARC/9.9"), good[8:]...),
		"truncated block":   good[:len(good)-20],
		"no trailer":        good[:len(good)-4],
		"no length":         bytes.Replace(good, []byte("Content-Length: "), []byte("Content-Lengthx: "), 1),
		"negative length":   bytes.Replace(good, []byte("\r\nContent-Length: "), []byte("\r\nContent-Length: -"), 1),
		"huge length":       bytes.Replace(good, []byte("\r\nContent-Length: "), []byte("\r\nContent-Length: 9999999999"), 1),
		"header only":       good[:200],
		"line too long":     append(append([]byte("WARC/1.1\r\nX: "), bytes.Repeat([]byte("a"), maxLine+10)...), "\r\n\r\n"...),
		"bad field line":    []byte("WARC/1.1\r\nno colon here\r\n\r\n"),
		"lone continuation": []byte("WARC/1.1\r\n continued\r\n\r\n"),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ReadRecord(bufio.NewReader(bytes.NewReader(data)))
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
	if _, err := ReadRecord(bufio.NewReader(bytes.NewReader(nil))); err != io.EOF {
		t.Fatalf("empty input: %v, want io.EOF", err)
	}
	// A digest that does not match is caught after framing succeeds.
	bad := bytes.Replace(good, []byte("Hello"), []byte("Jello"), 1)
	rec, err := ReadRecord(bufio.NewReader(bytes.NewReader(bad)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeResponse(rec); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("tampered payload: %v", err)
	}
}

func TestParseName(t *testing.T) {
	e := Entry{Key: id.OfString("u"), Digest: id.Sum([]byte("c")), Day: 20777}
	for _, tc := range []Entry{e, {Key: e.Key, Digest: e.Digest, Day: -3, Seq: 2}, {Day: 0}} {
		got, err := ParseName(tc.Name())
		if err != nil || got != tc {
			t.Errorf("ParseName(%q) = %+v, %v", tc.Name(), got, err)
		}
	}
	bad := []string{
		"", "x.warc.gz", e.Name()[:80] + ".warc.gz", e.Name() + ".tmp",
		e.Name()[:80] + "12a.warc.gz", e.Name()[:80] + "012.warc.gz", e.Name()[:80] + "1.0.warc.gz",
		e.Name()[:80] + "1.x.warc.gz", "G" + e.Name()[1:],
	}
	for _, name := range bad {
		if _, err := ParseName(name); err == nil {
			t.Errorf("ParseName(%q) accepted", name)
		}
	}
}

// FuzzReadRecord feeds arbitrary bytes to the WARC reader and the response
// decoder. Whatever decodes must re-encode to a record that decodes to the
// same capture.
func FuzzReadRecord(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "response.warc")); err == nil {
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte("WARC/1.0\r\nContent-Length: 0\r\n\r\n\r\n\r\n"))
	f.Add([]byte("WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 5\r\n\r\nHTTP/\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := ReadRecord(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			if err != io.EOF && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not wrapping ErrCorrupt: %v", err)
			}
			return
		}
		f1, err := decodeResponse(rec)
		if err != nil {
			return
		}
		c := f1.capture
		if checkCapture(&c) != nil {
			return
		}
		var buf bytes.Buffer
		if err := newGzipPool(DefaultGzipLevel).encodeResponse(&buf, &c, c.Time, f1.digest); err != nil {
			return // headers the writer refuses (e.g. invalid field values)
		}
		f2, err := decodeMember(buf.Bytes())
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if f2.capture.URL != c.URL || !f2.capture.Time.Equal(c.Time) || f2.capture.Status != c.Status ||
			!bytes.Equal(f2.capture.Body, c.Body) {
			t.Fatalf("round trip changed the capture")
		}
	})
}

// FuzzDecodeMember feeds arbitrary bytes to the version-file decoder.
func FuzzDecodeMember(f *testing.F) {
	var buf bytes.Buffer
	c := goldenCapture()
	if err := newGzipPool(DefaultGzipLevel).encodeResponse(&buf, c, c.Time, id.Sum(c.Body)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:buf.Len()-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := decodeMember(data)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error not wrapping ErrCorrupt: %v", err)
		}
		// As from a peer, within a small bound (Import's path).
		f, err := decodeMemberMax(data, nil, 1<<10)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bounded: error not wrapping ErrCorrupt: %v", err)
		}
		if err == nil && len(f.capture.Body) > 1<<10 {
			t.Fatalf("bounded: a body of %d bytes past the 1 KiB bound", len(f.capture.Body))
		}
	})
}

// FuzzParseName checks that every accepted name is canonical.
func FuzzParseName(f *testing.F) {
	f.Add(Entry{Key: id.OfString("u"), Digest: id.OfString("c"), Day: 20777, Seq: 1}.Name())
	f.Add("x.warc.gz")
	f.Fuzz(func(t *testing.T, name string) {
		e, err := ParseName(name)
		if err == nil && e.Name() != name {
			t.Fatalf("ParseName(%q) = %+v, which names %q", name, e, e.Name())
		}
	})
}
