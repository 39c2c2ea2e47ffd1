package gatewaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/fidelityweb"
)

// delayProxy forwards TCP connections to a target, holding every chunk
// of bytes for delay in each direction, and a new connection's first
// bytes one round trip more (the TCP handshake): a link with a round-trip
// time of 2×delay between the browser and the gateway, on loopback and
// without touching the machine's network settings.
type delayProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration
}

func newDelayProxy(tb testing.TB, target string, delay time.Duration) *delayProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &delayProxy{ln: ln, target: target, delay: delay}
	go p.serve()
	tb.Cleanup(func() { ln.Close() })
	return p
}

func (p *delayProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			go delayCopy(u, c, p.delay, 2*p.delay)
			delayCopy(c, u, p.delay, 0)
		}()
	}
}

// delayCopy copies src to dst, each chunk delay after it was read (the
// first one extra later), and closes both at the end.
func delayCopy(dst, src net.Conn, delay, extra time.Duration) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 256)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(delay + extra)}
				extra = 0
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// delayedGateway serves a framed gateway over a on two loopback
// listeners reached through delay proxies, whose addresses are its
// origins, and returns the UI origin's base URL and the gateway. Under
// /bare/ the UI origin also serves bare frames (bareFrames).
func delayedGateway(tb testing.TB, a gateway.Archive, delay time.Duration) (string, *gateway.Server) {
	tb.Helper()
	return delayedGatewayWrap(tb, a, delay, nil)
}

// delayedGatewayWrap is delayedGateway with the UI handler wrapped by
// wrap (when not nil).
func delayedGatewayWrap(tb testing.TB, a gateway.Archive, delay time.Duration, wrap func(http.Handler) http.Handler) (string, *gateway.Server) {
	tb.Helper()
	var proxies [2]*delayProxy
	var lns [2]net.Listener
	for i := range lns {
		lns[i] = listen(tb)
		proxies[i] = newDelayProxy(tb, lns[i].Addr().String(), delay)
	}
	gw, err := gateway.New(gateway.Config{Archive: a,
		UIOrigin: ":" + port(proxies[0].ln), ContentOrigin: ":" + port(proxies[1].ln)})
	if err != nil {
		tb.Fatal(err)
	}
	ui := gw.UI()
	if wrap != nil {
		ui = wrap(ui)
	}
	ui = bareFrames(ui, "http://"+proxies[1].ln.Addr().String())
	for i, h := range []http.Handler{ui, gw.Content()} {
		serve(tb, lns[i], h)
	}
	return "http://" + proxies[0].ln.Addr().String(), gw
}

// bareFrames answers /bare/web/<rest> with a page holding nothing but an
// iframe of content+"/web/<rest>" (the content origin's replay, the
// document of the framed replay's frame) and every other path with ui. A
// bare frame has no banner, style, script, sandbox or headers: it is the
// floor of any framed replay, what the browser charges for the replay in
// a frame of another origin. It is served by the UI origin, the only one
// besides the content origin that the content origin's frame-ancestors
// allows to frame it (a bare frame elsewhere shows the browser's error
// page instead of the replay).
func bareFrames(ui http.Handler, content string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.RequestURI(), "/bare/web/")
		if !ok {
			ui.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>frame</title></head>"+
			"<body style=\"margin:0\"><iframe src=\"%s/web/%s\" style=\"border:0;width:100%%;height:100vh;display:block\"></iframe></body></html>\n",
			content, html.EscapeString(rest))
	})
}

// delayedSingleOrigin serves a through a delay proxy from one origin
// (singleOriginServer) and returns its base URL.
func delayedSingleOrigin(tb testing.TB, a gateway.Archive, delay time.Duration) string {
	tb.Helper()
	ln := listen(tb)
	p := newDelayProxy(tb, ln.Addr().String(), delay)
	return singleOriginServer(tb, a, ln, p.ln.Addr().String())
}

// singleOriginServer serves a on ln from one origin, as the gateway did
// before it had two: the form and the dates, and the replays with the
// banner inserted in the page (a frameless gateway's content handler),
// all on one host and port, addr (ln's address when ""). It returns the
// origin's base URL.
func singleOriginServer(tb testing.TB, a gateway.Archive, ln net.Listener, addr string) string {
	tb.Helper()
	if addr == "" {
		addr = ln.Addr().String()
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatal(err)
	}
	// Two spellings of one origin: the gateway refuses equal specs.
	gw, err := gateway.New(gateway.Config{Archive: a, Frameless: true, UIOrigin: ":" + p, ContentOrigin: "http://" + addr})
	if err != nil {
		tb.Fatal(err)
	}
	serve(tb, ln, singleOrigin(gw))
	return "http://" + addr
}

// singleOrigin routes what the content origin serves (replays and the
// replay script) to gw's content handler and every other path to its UI.
func singleOrigin(gw *gateway.Server) http.Handler {
	ui, content := gw.UI(), gw.Content()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if strings.HasPrefix(p, "/static/replay") {
			content.ServeHTTP(w, r)
			return
		}
		if rest, ok := strings.CutPrefix(p, "/web/"); ok {
			if t, err := gateway.ParseWebPath(rest, r.URL.RawQuery); err == nil && t.Kind == gateway.KindReplay {
				content.ServeHTTP(w, r)
				return
			}
		}
		ui.ServeHTTP(w, r)
	})
}

func listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

func port(ln net.Listener) string { return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) }

func serve(tb testing.TB, ln net.Listener, h http.Handler) {
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	tb.Cleanup(srv.Close)
}

// arrival is how a reader comes to an archived page.
type arrival struct {
	name string
	// cold: in a browser context of its own (no connection, cache or
	// cookie of an earlier view); else in one context all views share.
	cold bool
	// calendar: from the dates of the URL (/web/*/<url>, loaded first,
	// not timed), by a click on the capture; else by typing the URL.
	calendar bool
	// noWorker: the tab bypasses service workers (the gateway writes
	// every framed page).
	noWorker bool
	// link: by following a link of an archived page to another page of
	// its site (the page loaded first, not timed), as a reader browsing
	// an archived site does; framed, only the content frame navigates.
	// The link leads to one of links (archived pages, no error page).
	link  bool
	links []string
}

var arrivals = []arrival{
	{name: "typed-cold", cold: true},
	{name: "typed-warm"},
	{name: "calendar-cold", cold: true, calendar: true},
	{name: "calendar-warm", calendar: true},
	{name: "link", link: true},
}

// loadTime opens an archived page in a new tab, as arrival a says, and
// returns the time from the start of its navigation to the end of its
// load event (the page, its frames and their embedded objects), as the
// browser's Navigation Timing reports it.
func (c *chrome) loadTime(tb testing.TB, base, ts, page string, a arrival) time.Duration {
	tb.Helper()
	var opts []chromedp.ContextOption
	if a.cold {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	tab, cancel := chromedp.NewContext(c.ctx, opts...)
	defer cancel()
	ctx, cancelT := context.WithTimeout(tab, 60*time.Second)
	defer cancelT()
	if _, err := chromedp.Call(ctx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: a.noWorker}); err != nil {
		tb.Fatal(err)
	}
	target := base + "/web/" + ts + "/" + page
	if a.link {
		return c.linkTime(tb, ctx, target, a.links)
	}
	if a.calendar {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/web/*/"+page)); err != nil {
			tb.Fatalf("load the dates of %s: %v", page, err)
		}
		// Let the dates page settle (what it preconnects or installs)
		// as it would while the reader looks for a date.
		time.Sleep(300 * time.Millisecond)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.caps a`))); err != nil {
			tb.Fatalf("click a capture of %s: %v", page, err)
		}
	} else if err := chromedp.Do(ctx, chromedp.Navigate(target)); err != nil {
		tb.Fatalf("load %s: %v", target, err)
	}
	// Navigation Timing of the top document: its loadEventEnd waits for
	// the frames' load events, which wait for their embedded objects.
	const js = `(function(){var n=performance.getEntriesByType("navigation")[0];` +
		`return n&&n.loadEventEnd>0&&location.pathname.indexOf("/web/*/")<0?n.loadEventEnd:0})()`
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if end, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js)); err == nil && end > 0 {
			return time.Duration(end * float64(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("%s: no load event within 30 s", target)
	return 0
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestReplayLatency measures what framing costs a reader (issue 18): the
// time from the start of a navigation to an archived page to the end of
// its load event (Navigation Timing), in headless Chromium, through
// links with a round-trip time of 0, 20 and 80 ms (HEROD_RTT_MS, a
// comma-separated list) between the browser and the gateway. The base is
// a single-origin gateway (delayedSingleOrigin: the page with its banner
// and the dates on one origin, as before framing); framed is the gateway
// as a node runs it, measured as a reader's browser meets it and with
// the UI origin's service worker bypassed (the gateway then writes every
// framed page). The floor of any framed replay is the single-origin
// replay in a bare frame of the UI origin (bareFrames), measured
// for typed arrivals and links. Each arrival (typed URL or a click on the dates page, in
// a fresh browser context or one shared by all views; or a link followed
// from another page of the site, framed a navigation of the content frame
// alone) is measured HEROD_VIEWS times (default 9) each way, in rotation
// (HEROD_ARRIVALS, a comma-separated list of their names, keeps only
// those), on the pages of the sample web or of the fidelity site
// (latencyPages, HEROD_LATENCY_SITE). It prints the
// medians, the fastest views and the median difference within rounds,
// and runs when HEROD_REPLAY_LATENCY is set; it fails only when a page
// does not load.
func TestReplayLatency(t *testing.T) {
	if os.Getenv("HEROD_REPLAY_LATENCY") == "" {
		t.Skip("the replay latency benchmark runs when HEROD_REPLAY_LATENCY is set")
	}
	rtts, views := latencyEnv(t)
	br := newChrome(t)
	m, pages, links := latencyPages(t)
	const ts = "20240102"
	for _, rtt := range rtts {
		delay := time.Duration(rtt) * time.Millisecond / 2
		single := delayedSingleOrigin(t, m, delay)
		framed, gw := delayedGateway(t, m, delay)
		bare := framed + "/bare"
		for _, a := range arrivals {
			if only := os.Getenv("HEROD_ARRIVALS"); only != "" && !slices.Contains(strings.Split(only, ","), a.name) {
				continue
			}
			a.links = links
			nw := a
			nw.noWorker = true
			// Ways to one page: the single-origin gateway, the framed one
			// as a reader's browser meets it, the framed one without its
			// service worker, and (typed arrivals only: the bare frame
			// has no dates page) the replay in a bare frame.
			ways := []func(p string) time.Duration{
				func(p string) time.Duration { return br.loadTime(t, single, ts, p, a) },
				func(p string) time.Duration { return br.loadTime(t, framed, ts, p, a) },
				func(p string) time.Duration { return br.loadTime(t, framed, ts, p, nw) },
			}
			if !a.calendar {
				ways = append(ways, func(p string) time.Duration { return br.loadTime(t, bare, ts, p, a) })
			}
			times := make([][]time.Duration, len(ways))
			if !a.cold { // one view of each first: the connections and cache a reader already has
				for _, way := range ways {
					way(pages[0])
				}
			}
			frames := gw.Stats().Frames
			for i := range views {
				p := pages[(i*7+1)%len(pages)]
				// Rotate which goes first, so that none always meets a
				// machine another has just warmed.
				for k := range ways {
					w := (i + k) % len(ways)
					times[w] = append(times[w], ways[w](p))
				}
			}
			// The machine is shared: a view's time swings with the load
			// of others. Report the medians and the median of the
			// differences within rounds (a round's views ran back to
			// back).
			diff := func(w, base int) time.Duration {
				d := make([]time.Duration, views)
				for i := range d {
					d[i] = times[w][i] - times[base][i]
				}
				return median(d)
			}
			// The fastest views are the least disturbed.
			mb, mf, mn := median(times[0]), median(times[1]), median(times[2])
			fb, ff, fn := slices.Min(times[0]), slices.Min(times[1]), slices.Min(times[2])
			line := fmt.Sprintf("latency: rtt %d ms %-13s views %d single-origin median %.1f ms fastest %.1f ms | "+
				"framed median %.1f ms (%.3f) fastest %.1f ms (%.3f) paired %+.1f ms (%+.2f RTT) | "+
				"framed without worker median %.1f ms (%.3f) fastest %.1f ms (%.3f) paired %+.1f ms | framed pages the gateway wrote %d",
				rtt, a.name, views, ms(mb), ms(fb),
				ms(mf), ms(mf)/ms(mb), ms(ff), ms(ff)/ms(fb), ms(diff(1, 0)), ms(diff(1, 0))/float64(max(rtt, 1)),
				ms(mn), ms(mn)/ms(mb), ms(fn), ms(fn)/ms(fb), ms(diff(2, 0)), gw.Stats().Frames-frames)
			if len(ways) > 3 {
				// What framing costs beyond the frame itself: the framed
				// replay against the same page in a bare frame.
				mz := median(times[3])
				line += fmt.Sprintf(" | bare frame median %.1f ms (%.3f of single-origin) paired %+.1f ms; "+
					"framed over bare frame %.3f paired %+.1f ms, without worker %.3f paired %+.1f ms",
					ms(mz), ms(mz)/ms(mb), ms(diff(3, 0)), ms(mf)/ms(mz), ms(diff(1, 3)), ms(mn)/ms(mz), ms(diff(2, 3)))
			}
			t.Log(line)
			fmt.Println(line)
		}
	}
}

// latencyPages returns the archive and pages of the browser latency
// benchmarks, and the archived pages a followed link may lead to: the
// sample web (benchPages), or with HEROD_LATENCY_SITE=fidelity the
// fidelity sample site (internal/fidelityweb) as herod's crawler archived
// it, whose pages load as real ones do, in chains (a stylesheet imports
// another that loads a web font; ES modules import modules that fetch
// data and add images) and link to each other through redirects.
func latencyPages(t testing.TB) (gateway.Archive, []string, []string) {
	t.Helper()
	switch site := os.Getenv("HEROD_LATENCY_SITE"); site {
	case "", "sample":
		m, pages := benchPages(t)
		return m, pages, pages
	case "fidelity":
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s := fidelityweb.New(fidelityweb.Config{})
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		m, _ := crawlSite(t, s.Seeds(), 0)
		vs, err := m.List(ctx, cdx.Query{URL: s.URL() + "/", Match: cdx.MatchPrefix})
		if err != nil {
			t.Fatal(err)
		}
		var pages, links []string
		for _, v := range vs {
			if !strings.HasSuffix(v.URL, ".html") || v.Status >= 400 {
				continue
			}
			links = append(links, v.URL)
			if v.Status == http.StatusOK {
				pages = append(pages, v.URL)
			}
		}
		if len(pages) == 0 {
			t.Fatal("the crawl archived no page of the fidelity site")
		}
		return m, pages, links
	default:
		t.Fatalf("HEROD_LATENCY_SITE=%q: want sample or fidelity", site)
		return nil, nil, nil
	}
}

// latencyEnv returns the round-trip times (HEROD_RTT_MS, comma-separated
// milliseconds; default 0, 20 and 80) and the views each way
// (HEROD_VIEWS, default 9) of the browser latency benchmarks.
func latencyEnv(tb testing.TB) (rtts []int, views int) {
	tb.Helper()
	rtts = []int{0, 20, 80}
	if s := os.Getenv("HEROD_RTT_MS"); s != "" {
		rtts = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				tb.Fatalf("HEROD_RTT_MS=%q: want milliseconds, comma-separated", s)
			}
			rtts = append(rtts, n)
		}
	}
	views = 9
	if s := os.Getenv("HEROD_VIEWS"); s != "" {
		var err error
		if views, err = strconv.Atoi(s); err != nil || views < 1 {
			tb.Fatalf("HEROD_VIEWS=%q: want a number of views", s)
		}
	}
	return rtts, views
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// linkScript returns a script that clicks the first link of the
// document to another of pages (archived URLs) and returns its URL, ""
// when the document has none. Banner links and links with a modifier
// (such as if_) do not count.
func linkScript(pages []string) string {
	list, _ := json.Marshal(pages)
	return `(function(){var ok={};` + string(list) + `.forEach(function(p){ok[p]=1});` +
		`var as=document.querySelectorAll("a[href]");` +
		`for(var i=0;i<as.length;i++){var a=as[i],h=a.href,m=/\/web\/[0-9]+\/(.*)$/.exec(h);` +
		`if(a.closest('[id^="herod"]')||h===location.href||!m||!ok[m[1]])continue;` +
		`a.click();return h}return ""})()`
}

// navDone reads the document's Navigation Timing as JSON: its URL, time
// origin (the start of its navigation, ms since the epoch) and load
// event end (0 until it ended).
const navDone = `JSON.stringify({url:location.href,origin:performance.timeOrigin,` +
	`end:(performance.getEntriesByType("navigation")[0]||{loadEventEnd:0}).loadEventEnd})`

type navTiming struct {
	URL    string  `json:"url"`
	Origin float64 `json:"origin"`
	End    float64 `json:"end"`
}

// linkTime loads target in the tab (not timed), follows a link of the
// archived page to another page of its site and returns the time from
// the start of that navigation to the end of its load event, and framed,
// to the moment the UI took the new page into the address bar (ui.js's
// history.replaceState, the banner's URL with it), whichever is later.
// Framed (a UI page or a bare frame), the link is the content frame's and
// only the frame navigates; single-origin, the tab does. The link leads
// to one of pages.
func (c *chrome) linkTime(tb testing.TB, ctx context.Context, target string, pages []string) time.Duration {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(target)); err != nil {
		tb.Fatalf("load %s: %v", target, err)
	}
	top := func(js string) string {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			return ""
		}
		return s
	}
	bare := strings.Contains(target, "/bare/web/")
	framed := bare || top(`String(!!document.getElementById("herod-frame"))`) == "true"
	eval := top
	if framed {
		tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
		if err != nil || len(tree.FrameTree.ChildFrames) == 0 {
			tb.Fatalf("%s: no content frame (%v)", target, err)
		}
		frameID := tree.FrameTree.ChildFrames[0].Frame.ID
		// The frame's document is another origin's: evaluate in an
		// isolated world of its own (a new one for each document).
		eval = func(js string) string {
			w, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frameID})
			if err != nil {
				return ""
			}
			r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: js, ContextID: w.ExecutionContextID})
			if err != nil || r.Result == nil {
				return ""
			}
			var s string
			if json.Unmarshal([]byte(r.Result.Value), &s) != nil {
				return ""
			}
			return s
		}
	}
	wait := func(what string, ok func(navTiming) bool) navTiming {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			var n navTiming
			if json.Unmarshal([]byte(eval(navDone)), &n) == nil && ok(n) {
				return n
			}
			time.Sleep(20 * time.Millisecond)
		}
		tb.Fatalf("%s: %s within 30 s", target, what)
		return navTiming{}
	}
	first := wait("no load event", func(n navTiming) bool { return n.End > 0 })
	// Time the UI's replaceState, which ui.js calls once the frame has
	// told it where it is.
	top(`(function(r){window.__herodMoved=0;history.replaceState=function(){` +
		`window.__herodMoved=performance.timeOrigin+performance.now();return r.apply(history,arguments)}})(history.replaceState),""`)
	if eval(linkScript(pages)) == "" {
		tb.Fatalf("%s: no link to another page", target)
	}
	next := wait("the link's page did not load", func(n navTiming) bool { return n.URL != first.URL && n.End > 0 })
	d := next.End
	if framed && !bare { // a bare frame has no UI to follow it
		deadline := time.Now().Add(10 * time.Second)
		for {
			moved, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.__herodMoved||0`))
			if err == nil && moved > 0 {
				d = max(d, moved-next.Origin)
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("%s: the UI did not follow the frame to %s", target, next.URL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return time.Duration(d * float64(time.Millisecond))
}
