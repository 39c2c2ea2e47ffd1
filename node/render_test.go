package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/spaweb"
)

// TestBrowserCaptureRing is issue 41's ring acceptance: in a 3-node ring
// where only node 1 has the browser-capture role, the sample single-page
// application is crawled from its entry point. Every page of it is a
// script-built shell, so every node hands its pages to node 1, which
// renders them and delivers each record to its URL's owner: every page
// is stored at its owner as captured in a browser and signed by node 1,
// records of all three owners are among them, the pages only the
// application's scripts name are archived, and every node's gateway
// replays them, the JSON their script fetches included.
func TestBrowserCaptureRing(t *testing.T) {
	if os.Getenv("HEROD_CAPTURE_RING") == "" {
		t.Skip("a browser renders 11 pages, 1-2 min on 2 shared cores: set HEROD_CAPTURE_RING=1 to run")
	}
	br := browsertest.Find(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	site := spaweb.New(spaweb.Config{ScrollPages: 1})
	if err := site.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { site.Close() })

	const role = 1
	base := Config{
		VirtualServers:    4,
		StabilizeInterval: 100 * time.Millisecond,
		FlushInterval:     20 * time.Millisecond,
		Crawl:             crawl.Config{HostRate: 2000, Concurrency: 16, AllowPrivate: loopback},
	}
	if os.Getenv("HEROD_CAPTURE_TRACE") != "" {
		base.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, base, func(i int, c *Config) {
		if i == (role+1)%3 {
			c.Frameless = true // a browser opening its replay URL sees the page, not the frame
		}
		if i == role {
			c.Browser = BrowserConfig{Capture: true, Path: br.Path(), Concurrency: 2, CPUShare: 1, QueueWait: 2 * time.Minute,
				Page: capture.Config{Timeout: 30 * time.Second, Quiet: 300 * time.Millisecond, StepQuiet: 100 * time.Millisecond, MaxScrolls: 8}}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.Close() })
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	renderer := lr.Nodes[role]
	for i, n := range lr.Nodes {
		if got := n.renderers(); i != role && (len(got) != 1 || got[0].Peer != renderer.self.Peer) {
			t.Fatalf("node %d sees %v as the members with the role, want node %d", i, got, role)
		}
	}
	start := time.Now()
	if err := lr.Nodes[0].Seed(ctx, []string{site.URL() + "/"}); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("crawled and rendered in %v", time.Since(start).Round(time.Millisecond))
	for i, n := range lr.Nodes {
		t.Logf("node %d render stats: %+v", i, n.RenderStats())
	}

	// Every page is stored at its owner, captured in a browser by node 1.
	pages := site.Pages()
	for k := range spaweb.FeedItems {
		pages = append(pages, fmt.Sprintf("%s/app/item-%d", site.URL(), k))
	}
	held := map[*Node]int{} // browser records signed by node 1, per owner
	check := func(u string) (*archive.Capture, bool) {
		t.Helper()
		cu, err := canon.Canonical(u)
		if err != nil {
			t.Fatal(err)
		}
		owner := lr.Owner(id.OfString(cu))
		_, c, err := owner.Store().Get(ctx, cu, time.Now())
		if err != nil {
			return nil, false
		}
		if c.Browser && c.Peer == renderer.self.Peer {
			held[owner]++
			return c, true
		}
		return c, false
	}
	for _, p := range pages {
		if c, ok := check(p); !ok {
			t.Errorf("%s: not stored at its owner as captured in a browser by node %d (%+v)", p, role, c != nil)
		}
	}
	for _, p := range site.HiddenPages() {
		name := p[strings.LastIndexByte(p, '/')+1:]
		if _, ok := check(site.URL() + "/api/page/" + name + ".json"); !ok {
			t.Errorf("%s's content (fetched by its script) not at its owner", p)
		}
	}
	for _, sub := range []string{"/static/app.js", "/api/nav.json", "/api/feed?page=0", "/img/item-3.png", "/static/spa.ttf"} {
		check(site.URL() + sub)
	}
	for i, n := range lr.Nodes {
		if held[n] == 0 {
			t.Errorf("node %d holds none of the records rendered", i)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every gateway replays a page only a script names, and the JSON its
	// script fetches; a browser replays its content from a gateway.
	ts := time.Now().UTC().Format("20060102150405")
	hidden := site.HiddenPages()[0]
	name := hidden[strings.LastIndexByte(hidden, '/')+1:]
	for i, n := range lr.Nodes {
		body, ctype := get(t, n.ReplayURL()+"web/"+ts+"/"+hidden)
		if !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, `id="view"`) {
			t.Errorf("node %d's gateway: %s replayed as %q", i, hidden, ctype)
		}
		body, ctype = get(t, n.ReplayURL()+"web/"+ts+"id_/"+site.URL()+"/api/page/"+name+".json")
		if !strings.HasPrefix(ctype, "application/json") || !strings.Contains(body, "This is the "+name+" page") {
			t.Errorf("node %d's gateway: the page's JSON replayed as %q: %.200s", i, ctype, body)
		}
	}
	site.Close() // the replay must not need the live site
	dom, _ := br.Load(t, lr.Nodes[(role+1)%3].ReplayURL()+"web/"+ts+"/"+hidden)
	// The navigation and the route's content are written by the script
	// from JSON it fetches.
	for _, want := range []string{">Only a script names this</a>", "This is the " + name + " page"} {
		if !strings.Contains(dom, want) {
			t.Errorf("a browser replaying %s from a gateway does not see %q:\n%.3000s", hidden, want, dom)
		}
	}
}

// TestBrowserCaptureNeedsChromium: a node given the role without a
// browser does not start, and says what to install.
func TestBrowserCaptureNeedsChromium(t *testing.T) {
	_, err := New(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		Browser: BrowserConfig{Capture: true, Path: filepath.Join(t.TempDir(), "chromium")}})
	if err == nil || !strings.Contains(err.Error(), "no Chromium found: install Debian's chromium package") {
		t.Fatalf("New: %v", err)
	}
}
