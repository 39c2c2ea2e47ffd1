package gatewaytest

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/fidelityweb"
	"github.com/herod-archive/herod/internal/testwait"
)

// crawlMem is a crawl.Archive over a Mem: what a one-node herod stores.
type crawlMem struct {
	*Mem
	mu     sync.Mutex
	states map[string]archive.CrawlState
	bytes  int64
}

func (c *crawlMem) Put(ctx context.Context, cp archive.Capture) (archive.Version, bool, error) {
	if err := c.Add(ctx, &cp); err != nil {
		return archive.Version{}, false, err
	}
	c.mu.Lock()
	c.bytes += int64(len(cp.Body))
	if cp.State != nil {
		c.states[cp.URL] = *cp.State
	}
	c.mu.Unlock()
	return versionOf(&cp), true, nil
}

func (c *crawlMem) State(_ context.Context, u string) (archive.CrawlState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.states[u]
	if !ok {
		return st, archive.ErrNotFound
	}
	return st, nil
}

func (c *crawlMem) SetState(_ context.Context, u string, st archive.CrawlState) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states[u] = st
	return nil
}

// selfForwarder hands links and requisites back to its own crawler: a
// one-node ring.
type selfForwarder struct{ c *crawl.Crawler }

func (f *selfForwarder) Forward(ctx context.Context, urls []string) error { return f.c.Add(ctx, urls) }
func (f *selfForwarder) ForwardRequisites(ctx context.Context, urls []string) error {
	return f.c.AddRequisites(ctx, urls)
}

// crawlSite crawls the whole site from seeds with herod's crawler, as a
// one-node ring with its default scope (page requisites with their
// queries: pageRequisites 0; -1 leaves them out), and returns the archive
// with the crawl's fetches and archived bytes.
func crawlSite(t testing.TB, seeds []string, pageRequisites int) (*crawlMem, crawl.Stats) {
	t.Helper()
	a := &crawlMem{Mem: NewMem(), states: map[string]archive.CrawlState{}}
	f := &selfForwarder{}
	cfg := crawl.Config{HostRate: 1000, HostConns: 4, Timeout: 10 * time.Second, PageRequisites: pageRequisites,
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	c, err := crawl.New(t.TempDir(), cfg, crawl.Deps{Archive: a, Forwarder: f, Requisites: f})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil && !errors.Is(err, crawl.ErrClosed) {
			t.Error(err)
		}
	}()
	if err := c.Add(ctx, seeds); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	testwait.For(t, "the crawl to be idle", 2*time.Minute, func() error {
		if !c.Idle() {
			return fmt.Errorf("busy: %+v", c.Stats())
		}
		return nil
	})
	return a, c.Stats()
}

// resourceKey is the identity of a subresource for matching live and
// replayed loads: its canonical URL without the "_" parameter, which
// scripts set to the time of the request (a live load and a replay never
// ask for the same one).
func resourceKey(u string) string {
	c, err := canon.Canonical(u)
	if err != nil {
		return u
	}
	p, err := url.Parse(c)
	if err != nil {
		return c
	}
	q := p.Query()
	if q.Has("_") {
		q.Del("_")
		p.RawQuery = q.Encode()
	}
	return p.String()
}

// archivedURL returns the archived URL a content-origin request of a
// replay stands for (/web/<ts><mod>/<url>), or "".
func archivedURL(u, content string) string {
	rest, ok := strings.CutPrefix(u, content+"/web/")
	if !ok {
		return ""
	}
	_, target, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	return target
}

// inArchive reports whether m holds a capture of u, or of u with another
// "_" (see resourceKey): whether the crawl archived what the live page
// loaded, so that the replay could have found it.
func inArchive(ctx context.Context, m *crawlMem, u string) bool {
	if vs, err := m.Versions(ctx, u); err == nil && len(vs) > 0 {
		return true
	}
	key := resourceKey(u)
	p, err := url.Parse(key)
	if err != nil {
		return false
	}
	vs, err := m.List(ctx, cdx.Query{URL: p.Scheme + "://" + p.Host + p.Path, Match: cdx.MatchPrefix})
	if err != nil {
		return false
	}
	for _, v := range vs {
		if resourceKey(v.URL) == key {
			return true
		}
	}
	return false
}

// TestFidelity is the replay fidelity benchmark of issue 19: herod's
// crawler archives the fidelity sample site (internal/fidelityweb), then
// headless Chromium loads each page live and through the gateway (framed,
// as a reader sees it) and the test reports the share of the
// subresources loaded live that also loaded in replay (the page's own
// http(s) requests: not the browser's PDF viewer or /favicon.ico), why
// the others are missing (never archived; archived but not loaded in
// replay; loaded with another type), the share of pages
// whose replay differs from the live page in less than 2% of pixels (the
// content frame against the live viewport: the banner excluded), the
// requests that reached the live site during the replays, and the
// crawl's fetches and archived bytes per page. It runs when HEROD_FIDELITY
// is set (HEROD_FIDELITY_PAGES pages, default 20; HEROD_FIDELITY_OUT a
// directory for the screenshots of pages that differ) and fails only when
// a replay reached the live site or a page did not load.
// scripts/bench-fidelity.sh runs it on this tree and on another commit.
func TestFidelity(t *testing.T) {
	if os.Getenv("HEROD_FIDELITY") == "" {
		t.Skip("the fidelity benchmark runs when HEROD_FIDELITY is set")
	}
	n := 20
	if s := os.Getenv("HEROD_FIDELITY_PAGES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("HEROD_FIDELITY_PAGES=%q: want a number of pages ≥ 2", s)
		}
	}
	out := os.Getenv("HEROD_FIDELITY_OUT")
	br := newChrome(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site := fidelityweb.New(fidelityweb.Config{Pages: n})
	if err := site.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer site.Close()

	// The crawl, and the same crawl without the requisites' exemption:
	// the difference is the extra fetches requisites cost.
	_, without := crawlSite(t, site.Seeds(), -1)
	m, stats := crawlSite(t, site.Seeds(), 0)
	pages := site.Pages()
	ts := gateway.FormatTimestamp(time.Now().UTC())
	ui, content, _, _ := serveGateway(t, gateway.Config{Archive: m})

	const w, h = 1024, 768
	var liveSubs, replayed, archived, archivedReplayed, equal, left, outside int
	var notArchived, notLoaded, wrongType int // why live subresources are missing in replay
	var liveLoad, replayLoad time.Duration
	for _, p := range pages {
		live := br.load(t, p, w, h, false, 300*time.Millisecond)
		before := site.Requests()
		rep := br.load(t, ui+"/web/"+ts+"/"+p, w, h, true, 300*time.Millisecond)
		left += int(site.Requests() - before)
		liveLoad += live.Load
		replayLoad += rep.Load

		got := map[string]string{} // resource → its type in replay
		for _, r := range rep.Requests {
			host := hostOf(r.URL)
			switch {
			case host == hostOf(ui):
			case host == hostOf(content):
				if a := archivedURL(r.URL, content); a != "" && r.Status >= 200 && r.Status < 400 {
					got[resourceKey(a)] = r.Type
				}
			case strings.HasPrefix(r.URL, "http"):
				outside++ // blocked by the content policy, or it reached a live host
			}
		}
		var missing []string
		subs := 0
		doc := true
		for _, r := range live.Requests {
			if doc { // the page and the redirects that led to it
				doc = r.Status >= 300 && r.Status < 400
				continue
			}
			// Not the page's: the browser's own (its PDF viewer is a
			// chrome-extension: page), a favicon it asks of any site.
			if r.Status < 200 || r.Status >= 400 || !strings.HasPrefix(r.URL, "http") || strings.HasSuffix(r.URL, "/favicon.ico") {
				continue
			}
			subs++
			held := inArchive(ctx, m, r.URL)
			if held {
				archived++
			}
			typ, ok := got[resourceKey(r.URL)]
			switch {
			case ok && r.Status < 300 && typ != r.Type: // a redirect has no type to compare
				wrongType++
				missing = append(missing, r.URL+" (replayed as "+typ+", live "+r.Type+")")
			case ok:
				replayed++
				if held {
					archivedReplayed++
				}
			case held:
				notLoaded++
				missing = append(missing, r.URL+" (archived, not loaded in replay)")
			default:
				notArchived++
				missing = append(missing, r.URL+" (never archived)")
			}
		}
		liveSubs += subs
		d := pixelDiff(live.Screenshot, rep.Screenshot)
		if d < 0.02 {
			equal++
		} else if out != "" {
			name := strings.NewReplacer("/", "_", ":", "_").Replace(strings.TrimPrefix(p, site.URL()))
			for side, img := range map[string]*visit{"live": &live, "replay": &rep} {
				if f, err := os.Create(filepath.Join(out, name+"."+side+".png")); err == nil {
					_ = png.Encode(f, img.Screenshot)
					f.Close()
				}
			}
		}
		t.Logf("%s: %d/%d subresources replayed, %.2f%% pixels differ, load %v live, %v replayed; missing %q",
			strings.TrimPrefix(p, site.URL()), subs-len(missing), subs, 100*d, live.Load.Round(time.Millisecond),
			rep.Load.Round(time.Millisecond), missing)
	}
	np := len(pages)
	summary := fmt.Sprintf("fidelity: pages %d subresources %d/%d (%.1f%%) of-archived %d/%d (%.1f%%) "+
		"missing: never-archived %d archived-not-loaded %d wrong-type %d visually-equal %d/%d (%.1f%%) "+
		"reached-live %d blocked-outside %d fetches/page %.2f extra-fetches/page %.2f archive-bytes/page %.0f "+
		"load-ms/page live %.1f replay %.1f",
		np, replayed, liveSubs, 100*float64(replayed)/float64(max(liveSubs, 1)),
		archivedReplayed, archived, 100*float64(archivedReplayed)/float64(max(archived, 1)),
		notArchived, notLoaded, wrongType, equal, np, 100*float64(equal)/float64(np),
		left, outside, float64(stats.FetchedToday)/float64(n), float64(stats.FetchedToday-without.FetchedToday)/float64(n),
		float64(m.bytes)/float64(n), float64(liveLoad.Milliseconds())/float64(np), float64(replayLoad.Milliseconds())/float64(np))
	t.Log(summary)
	fmt.Println(summary)
	if left != 0 {
		t.Errorf("%d requests reached the live site during the replays", left)
	}
}
