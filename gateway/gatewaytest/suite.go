package gatewaytest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/gateway"
)

// Harness connects the suite to an archive under test.
type Harness struct {
	// Archive is the implementation under test. If it also implements
	// gateway.Lister, the listing checks run too.
	Archive gateway.Archive
	// Add stores a capture so that Archive serves it once Add returns.
	Add func(ctx context.Context, c *archive.Capture) error
	// Base is prepended to the host names the suite invents, so that
	// several runs can share one archive; "" means "suite".
	Base string
	// Start is the suite's first capture time and Step the time between
	// its capture "days": zero means 2024-03-01 12:00 UTC and whole days
	// (stores keeping one version per URL per day keep them all). An
	// archive that lists a capture as of its date only when the date is
	// vouched for or recent (the node's) runs it on recent times.
	Start time.Time
	Step  time.Duration
}

// day0 is the first capture time the suite uses by default.
var day0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// TestArchive checks the contract of gateway.Archive (and gateway.Lister).
func TestArchive(t *testing.T, h Harness) {
	t.Helper()
	base := h.Base
	if base == "" {
		base = "suite"
	}
	start, step := h.Start, h.Step
	if start.IsZero() {
		start = day0
	}
	if step <= 0 {
		step = 24 * time.Hour
	}
	at := func(days int) time.Time { return start.Add(time.Duration(days) * step) }
	ctx := context.Background()
	page := "http://" + base + ".example/page"
	other := "http://" + base + ".example/other"
	elsewhere := "https://" + base + "-two.example/x"
	add := func(u string, day, status int, body string) {
		t.Helper()
		hdr := http.Header{"Content-Type": {"text/html"}}
		if err := h.Add(ctx, &archive.Capture{URL: u, Time: at(day), Status: status, Header: hdr, Body: []byte(body)}); err != nil {
			t.Fatalf("add %s day %d: %v", u, day, err)
		}
	}
	// Added out of order on purpose.
	add(page, 2, 200, "page day 2")
	add(page, 0, 200, "page day 0")
	add(page, 5, 404, "page day 5")
	add(other, 1, 200, "other day 1")
	add(elsewhere, 3, 200, "elsewhere day 3")

	t.Run("Versions", func(t *testing.T) {
		vs, err := h.Archive.Versions(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		want := []int{0, 2, 5}
		if len(vs) != len(want) {
			t.Fatalf("%d versions, want %d: %+v", len(vs), len(want), vs)
		}
		for i, v := range vs {
			if !v.Time.Equal(at(want[i])) || v.URL != page {
				t.Errorf("version %d: %s at %v, want %s at %v", i, v.URL, v.Time, page, at(want[i]))
			}
		}
		if vs[2].Status != 404 || vs[0].Length != int64(len("page day 0")) || vs[0].ContentType != "text/html" {
			t.Errorf("version fields: %+v", vs)
		}
		none, err := h.Archive.Versions(ctx, "http://"+base+".example/never")
		if err != nil || len(none) != 0 {
			t.Errorf("unknown URL: %d versions, %v; want none and no error", len(none), err)
		}
	})

	t.Run("Get", func(t *testing.T) {
		for _, tc := range []struct {
			at   time.Time
			body string
		}{
			{at(0), "page day 0"},
			{at(2), "page day 2"},
			{at(2).Add(-time.Second), "page day 0"},
			{at(4), "page day 2"},
			{at(5), "page day 5"},
			{at(400), "page day 5"},
			{at(-30), "page day 0"}, // every version newer: the oldest
		} {
			v, c, err := h.Archive.Get(ctx, page, tc.at)
			if err != nil {
				t.Errorf("Get at %v: %v", tc.at, err)
				continue
			}
			if c == nil || string(c.Body) != tc.body || !v.Time.Equal(c.Time) {
				t.Errorf("Get at %v: version %v, capture %v; want %q", tc.at, v.Time, describe(c), tc.body)
			}
		}
		_, _, err := h.Archive.Get(ctx, "http://"+base+".example/never", at(1))
		if !errors.Is(err, archive.ErrNotFound) {
			t.Errorf("Get of unknown URL: %v, want archive.ErrNotFound", err)
		}
	})

	l, ok := h.Archive.(gateway.Lister)
	if !ok {
		return
	}
	t.Run("List", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			q    cdx.Query
			want []string // "url day"
		}{
			{"exact", cdx.Query{URL: page}, []string{page + " 0", page + " 2", page + " 5"}},
			{"prefix", cdx.Query{URL: "http://" + base + ".example/", Match: cdx.MatchPrefix},
				[]string{other + " 1", page + " 0", page + " 2", page + " 5"}},
			{"host", cdx.Query{URL: base + "-two.example", Match: cdx.MatchHost}, []string{elsewhere + " 3"}},
			{"dates", cdx.Query{URL: "http://" + base + ".example/", Match: cdx.MatchPrefix, From: at(1), To: at(2)},
				[]string{other + " 1", page + " 2"}},
			{"limit", cdx.Query{URL: "http://" + base + ".example/", Match: cdx.MatchPrefix, Limit: 2},
				[]string{other + " 1", page + " 0"}},
		} {
			vs, err := l.List(ctx, tc.q)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			var got []string
			for _, v := range vs {
				got = append(got, fmt.Sprintf("%s %d", v.URL, int(v.Time.Sub(start)/step)))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
			}
		}
	})
}

func describe(c *archive.Capture) string {
	if c == nil {
		return "nil"
	}
	return fmt.Sprintf("%q at %v", c.Body, c.Time)
}
