package render

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/fidelityweb"
	"github.com/herod-archive/herod/internal/realweb"
	"github.com/herod-archive/herod/internal/spaweb"
)

// TestDefaultRuleShare measures the share of pages the default rule
// (no SURT rules: the first page of a host, then its verdict or the
// script heuristic) renders on the sample single-page application and
// on the documentation-like sites (fidelityweb; realweb's static
// pages), each page offered as the crawler
// offers it (its HTML fetched plainly). The first page of each site is
// rendered for real to learn its host's verdict. It fails unless the
// pages rendered are those the comments below name.
func TestDefaultRuleShare(t *testing.T) {
	br := browsertest.Find(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := capture.New(capture.Config{ExecPath: br.Path(), NoSandbox: os.Geteuid() == 0,
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	spa := spaweb.New(spaweb.Config{})
	if err := spa.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer spa.Close()
	docs := fidelityweb.New(fidelityweb.Config{Pages: 20})
	if err := docs.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer docs.Close()
	static, err := realweb.Start(ctx, realweb.Config{Hosts: 2, Pages: 10, NoDelay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer static.Close()
	var staticPages []string
	for _, seed := range static.Seeds() {
		for k := range 10 {
			staticPages = append(staticPages, fmt.Sprintf("%sp/%d.html", seed, k))
		}
	}

	spaPages := spa.Pages()
	for k := range 4 * spaweb.FeedItems {
		spaPages = append(spaPages, fmt.Sprintf("%s/app/item-%d", spa.URL(), k))
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-10s %5s %8s | %5s %5s %6s %6s | %s\n", "site", "pages", "rendered", "first", "host", "script", "share", "script heuristic alone")
	for _, site := range []struct {
		name  string
		pages []string
		want  func(i int) bool // whether the i-th page is rendered
	}{
		{"spaweb", spaPages, func(int) bool { return true }},
		// Pages of 256 bytes of text, a module script building part of
		// each: script-heavy by the heuristic.
		{"fidelityweb", docs.Pages()[:20], func(int) bool { return true }},
		// Static pages of 6-20 KB: the first page of each host only.
		{"realweb", staticPages, func(i int) bool { return i%10 == 0 }},
	} {
		ch := &Chooser{Verdicts: must(OpenVerdicts(""))}
		by := map[Reason]int{}
		heuristic := 0
		for i, p := range site.pages {
			h, body := fetch(t, p)
			if Measure(body).ScriptHeavy() {
				heuristic++
			}
			why := ch.Choose(p, h, body)
			by[why]++
			if why == ReasonFirst {
				res, err := c.Capture(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				base, _ := url.Parse(p)
				links, reqs := crawl.ExtractRequisites(base, h.Get("Content-Type"), body)
				if _, err := ch.Learned(p, append(links, reqs...), res.Links, Fetched(res)); err != nil {
					t.Fatal(err)
				}
			}
			if rendered := why != ""; rendered != site.want(i) {
				t.Errorf("%s: %s rendered %v (%q)", site.name, p, rendered, why)
			}
		}
		n := len(site.pages)
		r := n - by[""]
		fmt.Fprintf(&report, "%-10s %5d %8d | %5d %5d %6d %5.1f%% | %d of %d (%.1f%%)\n", site.name, n, r,
			by[ReasonFirst], by[ReasonHost], by[ReasonScript], 100*float64(r)/float64(n), heuristic, n, 100*float64(heuristic)/float64(n))
	}
	t.Log(report.String())
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func fetch(t *testing.T, u string) (http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header, b
}
