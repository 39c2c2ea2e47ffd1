package node

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/search"
)

// TestRecentCapturesBound checks the kept captures' bounds: bytes and
// count within budget (the oldest evicted), a capture taken once, and
// none kept for a version whose record does not hold its payload as is.
func TestRecentCapturesBound(t *testing.T) {
	r := newRecentCaptures()
	body := []byte(strings.Repeat("x", 100<<10))
	ver := func(i int, b []byte) archive.Version {
		return archive.Version{URL: fmt.Sprintf("http://a.test/%d", i), File: "segments/00000001.warc.zst",
			Offset: int64(i) * 1000, Length: int64(len(b)), Digest: id.Sum(b)}
	}
	for i := range 200 {
		r.keep(ver(i, body), &archive.Capture{Status: 200, Body: body})
		if r.bytes > recentBudget {
			t.Fatalf("after %d captures: %d bytes kept, budget %d", i+1, r.bytes, recentBudget)
		}
	}
	if _, ok := r.take(ver(0, body)); ok {
		t.Error("the oldest capture is still kept past the budget")
	}
	c, ok := r.take(ver(199, body))
	if !ok || c.URL != ver(199, body).URL || len(c.Body) != len(body) {
		t.Fatalf("newest capture: %v, %v", c, ok)
	}
	if _, ok := r.take(ver(199, body)); ok {
		t.Error("a capture was taken twice")
	}
	small := []byte("<p>hi</p>")
	for i := range 3 * recentMax {
		r.keep(ver(1000+i, small), &archive.Capture{Status: 200, Body: small})
	}
	if len(r.m) > recentMax || len(r.order) > 2*recentMax {
		t.Errorf("%d captures and %d keys kept, bounds %d and %d", len(r.m), len(r.order), recentMax, 2*recentMax)
	}

	v := ver(5000, small)
	r.keep(v, &archive.Capture{Status: 200, Body: small, Truncated: "length"})
	r.keep(ver(5001, small), &archive.Capture{Status: 200, Body: []byte("<p>other</p>")})
	other := ver(5002, small)
	other.Digest = id.Sum([]byte("not this"))
	r.keep(other, &archive.Capture{Status: 200, Body: small, Digest: id.Sum(small)})
	for _, v := range []archive.Version{v, ver(5001, small), other} {
		if _, ok := r.take(v); ok {
			t.Errorf("%s: kept a capture whose payload the record does not hold as is", v.URL)
		}
	}
}

// TestRecentReadsAsStored checks that the search indexer's read of a
// version the crawler just stored gives the document a read of the
// store gives: same URL, status, type, payload and terms, for pages,
// a redirect, a 404 and a page in another charset.
func TestRecentReadsAsStored(t *testing.T) {
	st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := newRecentCaptures()
	put := keepingStore{st, r}
	read := recentReader{st, r}
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	pages := []struct {
		url, ctype string
		status     int
		body       string
	}{
		{"http://a.test/", "text/html; charset=utf-8", 200, `<title>Front</title><p>Herodotus of Halicarnassus <a href="/b">b</a>`},
		{"http://a.test/b", "text/html", 200, `<html><body><h1>Histories</h1>Book one, Clio.</body></html>`},
		{"http://a.test/old", "text/html", 301, `<a href="/b">moved</a>`},
		{"http://a.test/gone", "text/html", 404, `<p>not here</p>`},
		{"http://a.test/latin", "text/html; charset=iso-8859-1", 200, "<p>caf\xe9 cr\xe8me</p>"},
		{"http://a.test/data.txt", "text/plain", 200, "plain words in a text file"},
	}
	ctx := context.Background()
	for i, p := range pages {
		c := archive.Capture{URL: p.url, Time: at.Add(time.Duration(i) * time.Second), Status: p.status,
			Header: http.Header{"Content-Type": {p.ctype}, "Etag": {fmt.Sprintf(`"%d"`, i)}}, Body: []byte(p.body)}
		v, added, err := put.Put(ctx, c)
		if err != nil || !added {
			t.Fatalf("%s: put: %v, added %v", p.url, err, added)
		}
		stored, err := st.Read(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := read.Read(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if got.URL != stored.URL || got.Status != stored.Status || string(got.Body) != string(stored.Body) ||
			got.Header.Get("Content-Type") != stored.Header.Get("Content-Type") {
			t.Errorf("%s: kept %q %d %q, stored %q %d %q", p.url, got.URL, got.Status, got.Header.Get("Content-Type"),
				stored.URL, stored.Status, stored.Header.Get("Content-Type"))
		}
		dk, errK := search.ExtractCaptureDoc(got)
		ds, errS := search.ExtractCaptureDoc(stored)
		if !reflect.DeepEqual(dk, ds) || (errK == nil) != (errS == nil) {
			t.Errorf("%s: document from the kept capture differs from the stored one's:\n%+v (%v)\n%+v (%v)", p.url, dk, errK, ds, errS)
		}
	}
	if r.hits != int64(len(pages)) {
		t.Errorf("%d reads answered from the kept captures, want %d", r.hits, len(pages))
	}
	// Read again: taken, so from the store.
	vs, err := st.Versions(ctx, pages[0].url)
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions: %v, %v", vs, err)
	}
	if _, err := read.Read(ctx, vs[0]); err != nil || r.hits != int64(len(pages)) {
		t.Errorf("second read: %v, hits %d", err, r.hits)
	}
}
