package query

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
)

// TestAccessRulesLocal: the node's access rules hold for what its store
// answers, to its own gateway and other nodes alike: a list and a page
// leave out the excluded URL and keep the blocked one, an export leaves
// out both.
func TestAccessRulesLocal(t *testing.T) {
	ctx := context.Background()
	svc := storeService(t, "http://h.example/a", "http://h.example/blocked", "http://h.example/gone")
	set, _ := access.NewSet([]access.Rule{
		{URL: "http://h.example/blocked", Action: access.Block},
		{URL: "http://h.example/gone", Action: access.Exclude},
	})
	svc.Access = func(u string, tm time.Time) access.Decision { return set.Decide(u, tm, time.Now()) }
	urls := func(vs []archive.Version) string {
		var b strings.Builder
		for _, v := range vs {
			b.WriteString(v.URL + " ")
		}
		return b.String()
	}
	vs, err := svc.localList(ctx, archive.Query{Host: "h.example"}, 0)
	if err != nil || len(vs) != 4 || strings.Contains(urls(vs), "gone") {
		t.Fatalf("list: %s, %v", urls(vs), err)
	}
	rows, _, err := svc.localPage(ctx, archive.Query{Host: "h.example"}, pageRequest{N: 10})
	if err != nil || len(rows) != 4 {
		t.Fatalf("page: %d rows, %v", len(rows), err)
	}
	var w bytes.Buffer
	if err := svc.serveExport(ctx, Request{Op: "export", Query: archive.Query{Host: "h.example"}}, &w); err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	svc.Access = nil
	if err := svc.serveExport(ctx, Request{Op: "export", Query: archive.Query{Host: "h.example"}}, &plain); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(plain.Bytes(), []byte("h.example/gone")) || bytes.Contains(w.Bytes(), []byte("h.example/gone")) ||
		bytes.Contains(w.Bytes(), []byte("h.example/blocked")) || !bytes.Contains(w.Bytes(), []byte("h.example/a")) {
		t.Fatalf("export with rules: %d bytes (without: %d), hidden captures in it or the allowed one missing", w.Len(), plain.Len())
	}
}
