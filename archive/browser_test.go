package archive

import (
	"bytes"
	"context"
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
		rec, err := plainResponse(&c, t0, id.Sum(c.Body))
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(rec, []byte("\r\n"+HeaderBrowser+": 1\r\n")); got != browser {
			t.Errorf("browser %v: record holds the field: %v", browser, got)
		}
	}
}
