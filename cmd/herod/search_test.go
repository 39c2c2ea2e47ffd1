package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// TestSearchCommand runs herod search against a gateway whose index is
// one local posting store of a small corpus.
func TestSearchCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	arc, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer arc.Close()
	st, err := search.OpenStore(filepath.Join(dir, "search"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := searchtest.New(1, 20)
	if err := c.Load(ctx, arc, 4, nil); err != nil {
		t.Fatal(err)
	}
	ix := &search.Indexer{Archive: arc, Sink: search.StoreSink{Store: st}, Docs: st}
	if _, err := ix.Backfill(ctx, arc, nil); err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Archive: arc, Search: st, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	day2 := c.Day(2).Format("20060102150405")
	out, err := run(t, searchCmd, "--node", srv.URL, "--data", dir, "--at", day2, c.AddedWord)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 matching pages as of " + day2, "1. " + c.Pages[1].Title, c.Changed, "/web/" + day2 + "/" + c.Changed, "[" + c.AddedWord + "]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, searchCmd, "--node", srv.URL, "--data", dir, "--at", c.Day(1).Format("20060102150405"), c.AddedWord)
	if err != nil || !strings.Contains(out, "no archived page holds every word") {
		t.Errorf("as of day 1: %q, %v", out, err)
	}
	if _, err := run(t, searchCmd, "--node", srv.URL, "--data", dir, "the"); err == nil || !strings.Contains(err.Error(), "very common words") {
		t.Errorf("a stop word alone: %v", err)
	}
	out, err = run(t, searchCmd, "--node", srv.URL, "--data", dir, "--json", c.AddedWord)
	if err != nil || !strings.Contains(out, `"url": "`+c.Changed+`"`) {
		t.Errorf("--json: %q, %v", out, err)
	}
}
