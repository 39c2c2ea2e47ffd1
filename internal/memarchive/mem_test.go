package memarchive

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

// The contract of gateway.Archive and gateway.Lister is checked by
// gatewaytest.TestMem (the shared suite); these tests check what Mem adds:
// canonical URLs, replacement, copies, and the index's fields.

func TestAdd(t *testing.T) {
	ctx := context.Background()
	m := New()
	at := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	hdr := http.Header{"Content-Type": {"text/html"}}
	c := &archive.Capture{URL: "HTTP://Example.com", Time: at, Status: 200, Header: hdr, Body: []byte("first"), Peer: "p1"}
	if err := m.Add(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Body[0] = 'F' // Mem keeps its own copy
	if err := m.Add(ctx, &archive.Capture{URL: "ftp://example.com/", Time: at}); err == nil {
		t.Error("ftp URL added")
	}
	vs, err := m.Versions(ctx, "http://example.com/")
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions %+v, %v; want one", vs, err)
	}
	v := vs[0]
	if v.URL != "http://example.com/" || v.Peer != "p1" || v.Size != 5 || v.Length != 5 || v.ContentType != "text/html" || v.File == "" {
		t.Errorf("version %+v", v)
	}
	_, got, err := m.Get(ctx, "http://example.com/", at)
	if err != nil || string(got.Body) != "first" {
		t.Fatalf("get: %v, %v", got, err)
	}
	got.Body[0] = 'X' // and hands out copies
	// The same URL and time replaces.
	if err := m.Add(ctx, &archive.Capture{URL: "http://example.com/", Time: at, Status: 404, Body: []byte("second")}); err != nil {
		t.Fatal(err)
	}
	all, err := m.List(ctx, cdx.Query{Match: cdx.MatchPrefix})
	if err != nil || len(all) != 1 || all[0].Status != 404 {
		t.Fatalf("list after replacing: %+v, %v", all, err)
	}
	if _, got, _ := m.Get(ctx, "http://example.com/", at); string(got.Body) != "second" {
		t.Errorf("replaced body %q", got.Body)
	}
	if _, _, err := m.Get(ctx, "http://example.com/none", at); !errors.Is(err, archive.ErrNotFound) {
		t.Errorf("unknown URL: %v", err)
	}
}
