package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// TestCDXPageHostileRowsFirst: in a ring of 4 real nodes, a hostile
// member answers ring-wide CDX pages from 1,001 captures signed by
// itself, dated a minute ago, of URLs it does not hold, which sort before
// every honest capture of the host: a full page of the 1,000 rows the
// gateway asks each member for, and "more". An honest gateway's CDX pages of 3 rows
// (limit=3, and resumed with the resume key until the end) list the
// owner's captures, each once, and none of the made-up ones; the
// member's pages are counted as excluded. Before, every page failed
// (502): the member's frontier cut it before its first honest row.
func TestCDXPageHostileRowsFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("four-node ring: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr := startQueryRing(ctx, t)
	hostile, gw := lr.Nodes[0], lr.Nodes[3]
	// "a" sorts before "z": the made-up rows come first in CDX order.
	forged := pickHeld(lr, "a", 1001, func(hs []*Node) bool { return !slices.Contains(hs, hostile) })
	honest := pickHeld(lr, "z", 5, func(hs []*Node) bool { return hs[0] != hostile })
	capture := pageCapture(time.Now().Add(-time.Minute))
	st, err := archive.Open(filepath.Join(t.TempDir(), "hostile"), archive.Options{NoSync: true, Signer: hostile.identity})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, u := range forged {
		if _, _, err := st.Put(ctx, capture(u)); err != nil {
			t.Fatal(err)
		}
	}
	answerQueriesFrom(hostile, st)
	for _, u := range honest {
		if _, _, err := lr.Owner(id.OfString(u)).store.Put(ctx, capture(u)); err != nil {
			t.Fatal(err)
		}
	}

	page := func(q string) ([]string, string) {
		t.Helper()
		resp, err := http.Get(gw.GatewayURL() + "cdx?url=h.example&matchType=host&output=json&fl=original&limit=3&showResumeKey=true" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("cdx%s: %d %.300s", q, resp.StatusCode, body)
		}
		var rows [][]string
		if err := json.Unmarshal(body, &rows); err != nil {
			t.Fatalf("cdx%s: %v: %.300q", q, err, body)
		}
		var urls []string
		resume := ""
		for i, r := range rows[min(len(rows), 1):] {
			switch {
			case len(r) == 0:
			case i > 0 && len(rows[i]) == 0:
				resume = r[0] // after the empty row: the resume key
			default:
				urls = append(urls, r[0])
			}
		}
		return urls, resume
	}
	var got []string
	resume := ""
	for range 10 {
		q := ""
		if resume != "" {
			q = "&resumeKey=" + url.QueryEscape(resume)
		}
		urls, next := page(q)
		got = append(got, urls...)
		if next == "" {
			break
		}
		resume = next
	}
	want := slices.Clone(honest)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("paged CDX lists %q, want %q", got, want)
	}
	if n := gw.Status().Trust.ExcludedPages; n == 0 {
		t.Error("the hostile member's pages were not counted as excluded")
	}
	t.Logf("pages with the member excluded: %d; not-held rows %d", gw.query.Excluded(), gw.query.NotHeld())
}
