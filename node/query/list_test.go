package query

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/archivetest"
)

var q0 = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// storeService returns a service that has only a store holding, for each
// URL, versions on days 0 and 1.
func storeService(t testing.TB, urls ...string) *Service {
	t.Helper()
	s := archivetest.TwoDays(t, q0, urls...)
	return &Service{Store: s}
}

func TestLocalList(t *testing.T) {
	n := storeService(t, "http://h.example/b", "http://h.example/a", "http://www.h.example/c", "https://h.example/a", "http://x.example/")
	all, err := n.localList(context.Background(), archive.Query{Host: "h.example"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 || !slices.IsSortedFunc(all, CDXCompare) {
		t.Fatalf("list = %d versions (sorted: %v), want 6 in CDX order", len(all), slices.IsSortedFunc(all, CDXCompare))
	}
	for limit := 1; limit <= 7; limit++ {
		got, err := n.localList(context.Background(), archive.Query{Host: "h.example"}, limit)
		if err != nil || !slices.EqualFunc(got, all[:min(limit, 6)], sameVersion) {
			t.Fatalf("limit %d: %d versions, %v", limit, len(got), err)
		}
	}
	for _, q := range []archive.Query{{}, {Host: "h.example", URL: "http://h.example/a"}, {Host: "h", From: q0, To: q0.Add(-time.Hour)}} {
		if _, err := n.localList(context.Background(), q, 0); err == nil {
			t.Errorf("query %+v accepted", q)
		}
	}
}

// sameVersion compares the fields a query returns.
func sameVersion(a, b archive.Version) bool {
	return a.URL == b.URL && a.Time.Equal(b.Time) && a.Digest == b.Digest && a.Key == b.Key &&
		a.Status == b.Status && a.Length == b.Length && a.Entry() == b.Entry()
}
