package archive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// TestBrowserMarkerRoundTrip: a capture marked as made in a browser keeps
// the mark through Put, ReadFile, Import into another store, Get and
// OpenBody; an unmarked one stays unmarked.
func TestBrowserMarkerRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, browser := range []bool{true, false} {
		c := capture("http://example.org/app", t0, "<html>rendered</html>")
		c.Browser = browser
		name, data := putFile(t, nil, c)
		dst := openTest(t, Options{})
		v, added, err := dst.Import(ctx, name, data)
		if err != nil || !added {
			t.Fatalf("import: %v, added %v", err, added)
		}
		_, got, err := dst.Get(ctx, v.URL, v.Time)
		if err != nil {
			t.Fatal(err)
		}
		if got.Browser != browser {
			t.Errorf("Get after import: Browser %v, want %v", got.Browser, browser)
		}
		b, err := dst.OpenBody(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if b.Capture.Browser != browser {
			t.Errorf("OpenBody: Browser %v, want %v", b.Capture.Browser, browser)
		}
		b.Close()
	}
}

// TestBrowserMarkerField: the marker is the WARC field HeaderBrowser,
// written only on marked captures.
func TestBrowserMarkerField(t *testing.T) {
	c := capture("http://example.org/app", t0, "x")
	for _, browser := range []bool{true, false} {
		c.Browser = browser
		head, block, err := responseBlock(&c)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := plainResponse(&c, t0, id.Sum(c.Body), head, block)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(rec, []byte("\r\n"+HeaderBrowser+": 1\r\n")); got != browser {
			t.Errorf("browser %v: record holds the field: %v", browser, got)
		}
	}
}

// TestBrowserMarkerIndexed: the index keeps the marker (Version.Browser)
// through Put, Import and Reindex, and reads values written without it.
func TestBrowserMarkerIndexed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain := capture("http://example.org/plain", t0, "<html>fetched</html>")
	rendered := capture("http://example.org/app", t0, "<html>rendered</html>")
	rendered.Browser = true
	mustPut(t, s, plain)
	rv, _ := mustPut(t, s, rendered)
	if !rv.Browser {
		t.Fatal("Put: version not marked")
	}
	dst := openTest(t, Options{})
	data, err := s.ReadFile(ctx, rv.Entry())
	if err != nil {
		t.Fatal(err)
	}
	if iv, _, err := dst.Import(ctx, rv.Entry().Name(), data); err != nil || !iv.Browser {
		t.Fatalf("Import: %v, browser %v", err, iv.Browser)
	}
	check := func(when string, s *Store) {
		t.Helper()
		for u, want := range map[string]bool{plain.URL: false, rendered.URL: true} {
			vs, err := s.Versions(ctx, u)
			if err != nil || len(vs) != 1 || vs[0].Browser != want {
				t.Errorf("%s: versions of %s: %v %+v, want browser %v", when, u, err, vs, want)
			}
		}
	}
	check("live", s)
	s.Close()
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	if _, err := Reindex(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reindexed", s)

	// A value without the flags (as written before them) reads as unmarked;
	// unknown flags are refused.
	v := Version{URL: "http://example.org/", Key: id.OfString("http://example.org/"), Time: t0, Status: 200, Offset: 1, Size: 2}
	key := versionKey(v.Key, v.Time, v.Digest)
	if sv, err := decodeStored(key, encodeVersion(v, 1, 0)); err != nil || sv.Browser {
		t.Errorf("value without flags: %v, browser %v", err, sv.Browser)
	}
	if _, err := decodeStored(key, append(encodeVersion(v, 1, 0), 2)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("value with an unknown flag: %v, want ErrCorrupt", err)
	}
}
