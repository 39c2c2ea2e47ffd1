package capture

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Capturer renders pages in headless Chromium.
type Capturer struct {
	cfg Config
}

// New returns a Capturer for cfg, or an error when cfg names no browser.
func New(cfg Config) (*Capturer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Capturer{cfg: cfg}, nil
}

// routesScript records the URLs a page's scripts give history.pushState
// and replaceState, before any of the page's own scripts run.
const routesScript = `(function(){
  var r = [];
  ["pushState", "replaceState"].forEach(function(n) {
    var f = history[n];
    history[n] = function(s, t, u) {
      try { if (u != null && r.length < 1000) r.push(new URL(u, location.href).href); } catch (e) {}
      return f.apply(this, arguments);
    };
  });
  Object.defineProperty(window, "__herodRoutes", {value: r});
})();`

// linksScript returns the rendered page's anchors and the pushed routes.
const linksScript = `(function(n){
  var out = [];
  document.querySelectorAll("a[href], area[href]").forEach(function(a) { if (out.length < n) out.push(String(a.href)); });
  return {links: out, routes: (window.__herodRoutes || []).slice(0, n)};
})(%d)`

// scrollScript scrolls down one viewport, lets two frames pass (so that
// intersection observers and lazy images see the new position) and
// reports whether the view had reached the end of the page before the
// step, and the page's height after it.
const scrollScript = `new Promise(function(done){
  var el = document.scrollingElement || document.documentElement;
  var end = window.scrollY + window.innerHeight >= el.scrollHeight - 2;
  window.scrollBy(0, Math.max(1, window.innerHeight - 50));
  requestAnimationFrame(function(){ requestAnimationFrame(function(){
    done({end: end, height: el.scrollHeight});
  }); });
})`

// scrollStep is what scrollScript returns.
type scrollStep struct {
	End    bool    `json:"end"`
	Height float64 `json:"height"`
}

// Capture renders pageURL and returns what the browser fetched, the
// links of the rendered page and a screenshot. A page that hits a cap
// returns what was recorded until then, with Result.Capped saying so;
// the error is for a browser that cannot be started or a page that
// cannot be opened at all (refused by the address rules, say).
func (c *Capturer) Capture(ctx context.Context, pageURL string) (*Result, error) {
	if err := checkURL(ctx, pageURL, c.cfg.AllowPrivate, c.cfg.Resolver); err != nil {
		return nil, fmt.Errorf("capture %s: %w", pageURL, err)
	}
	start := time.Now()
	dir, err := os.MkdirTemp(c.cfg.TempDir, "herod-capture-*")
	if err != nil {
		return nil, fmt.Errorf("capture: profile dir: %w", err)
	}
	defer os.RemoveAll(dir)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(c.cfg.ExecPath), chromedp.UserDataDir(dir), chromedp.DisableGPU,
		chromedp.WindowSize(c.cfg.Width, c.cfg.Height),
		chromedp.Flag("disable-popup-blocking", false),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		// Little traffic of the browser's own (updates, sign-in, time,
		// hints, reporting); the proxy refuses what is left.
		chromedp.Flag("no-pings", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("allow-browser-signin", false),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,OptimizationHints,MediaRouter,"+
			"DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,"+
			"InterestFeedContentSuggestions,PrivacySandboxSettings4,SafeBrowsing,NetworkTimeServiceQuerying,"+
			"PreconnectToSearch,SearchPrefetchServicePrefetching"),
		// One renderer for the page and its frames, so that the tab's
		// interception sees every frame's requests.
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("site-per-process", false),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("js-flags", fmt.Sprintf("--max-old-space-size=%d", max(c.cfg.MaxMemory>>20, 64))),
	)
	if c.cfg.NoSandbox {
		opts = append(opts, chromedp.NoSandbox)
	}
	px, err := startProxy(c.cfg.AllowPrivate, c.cfg.Resolver)
	if err != nil {
		return nil, fmt.Errorf("capture: proxy: %w", err)
	}
	defer px.Close()
	opts = append(opts, chromedp.ProxyServer("http://"+px.Addr()),
		// Loopback addresses go through the proxy too.
		chromedp.Flag("proxy-bypass-list", "<-loopback>"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA() // kills the browser and waits for it
	stop := context.AfterFunc(ctx, cancelA)
	defer stop()

	tab, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	// The whole page, bodies included, within Timeout; behaviours stop
	// a little earlier so that what was recorded can be collected.
	tabCtx, cancelT := context.WithTimeout(tab, c.cfg.Timeout)
	defer cancelT()
	rec := newRecorder(&c.cfg, px)
	res := &Result{URL: pageURL}
	usage := &usageProbe{}

	if err := chromedp.Do(tabCtx); err != nil {
		return nil, fmt.Errorf("capture: start browser: %w", err)
	}
	if p := chromedp.FromContext(tabCtx).Browser.Process(); p != nil {
		usage.pid = p.Pid
	}
	go rec.run(tabCtx)
	if err := chromedp.Listen(tabCtx, rec.listen); err != nil {
		return nil, fmt.Errorf("capture: listen: %w", err)
	}
	if err := chromedp.ListenBrowser(tabCtx, rec.listen); err != nil {
		return nil, fmt.Errorf("capture: listen: %w", err)
	}
	if err := c.setup(tabCtx); err != nil {
		return nil, fmt.Errorf("capture: set up tab: %w", err)
	}

	// The memory cap: a page past it is stopped as at the time cap.
	watch := &usageProbe{pid: usage.pid}
	watchCtx, stopWatch := context.WithCancel(tabCtx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-tick.C:
			}
			if watch.sample(); watch.peak > c.cfg.MaxMemory {
				rec.mu.Lock()
				rec.cap(CapMemory)
				rec.mu.Unlock()
				cancelT()
				return
			}
		}
	}()

	behave, cancelB := context.WithTimeout(tabCtx, c.cfg.Timeout*9/10)
	defer cancelB()
	timedOut := c.behave(behave, rec, res, usage) != nil

	// Bodies still being read get the rest of the time.
	done := make(chan struct{})
	go func() { rec.bodies.Wait(); close(done) }()
	select {
	case <-done:
	case <-tabCtx.Done():
		timedOut = true
	}
	stopWatch()
	<-watched
	usage.sample()
	usage.peak = max(usage.peak, watch.peak)
	res.Usage = Usage{Wall: time.Since(start), CPU: usage.cpu, PeakMemory: usage.peak}
	cancelT()
	cancelTab()
	cancelA()
	<-done

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, x := range rec.ex {
		x.SentHeader = rec.sentHeader(x)
		res.Exchanges = append(res.Exchanges, *x)
	}
	res.Refused = slices.Clone(rec.refused)
	px.Close()
	res.RefusedConns = px.Refused()
	res.Downloads = rec.downloads
	if (timedOut || ctx.Err() != nil) && !rec.capped[CapMemory] {
		rec.cap(CapTime)
	}
	for _, k := range []Cap{CapTime, CapRequests, CapBytes, CapScrolls, CapMemory} {
		if rec.capped[k] {
			res.Capped = append(res.Capped, k)
		}
	}
	return res, nil
}

// setup enables the domains the capture listens to, request
// interception, the route recorder and the download refusal.
func (c *Capturer) setup(ctx context.Context) error {
	maxBuf := c.cfg.MaxBytes
	calls := []func() error{
		func() error {
			return chromedp.Do(ctx, chromedp.EmulateViewport(int64(c.cfg.Width), int64(c.cfg.Height)))
		},
		func() error {
			_, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorDeny, EventsEnabled: new(true)})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{MaxTotalBufferSize: &maxBuf, MaxResourceBufferSize: &maxBuf})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}}})
			return err
		},
		func() error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: routesScript})
			return err
		},
	}
	for _, call := range calls {
		if err := call(); err != nil {
			return err
		}
	}
	return nil
}

// behave opens the page and runs the behaviours: wait for load, scroll
// to the end, settle, collect links, screenshot. It returns ctx's error
// when the time ran out first.
func (c *Capturer) behave(ctx context.Context, rec *recorder, res *Result, usage *usageProbe) error {
	if err := chromedp.Do(ctx, chromedp.Navigate(res.URL)); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A page that fails to load (a download, an error page) still
		// has its exchanges; there is nothing to scroll.
		c.cfg.Logger.Debug("capture: navigate", "url", res.URL, "err", err)
		return nil
	}
	usage.sample()
	if err := rec.settle(ctx, c.cfg.StepQuiet); err != nil {
		return err
	}
	// Scroll until a step starts at the end of a page whose height the
	// previous step did not change (nothing more loaded), or the cap.
	height := -1.0
	for res.Scrolls < c.cfg.MaxScrolls {
		st, err := chromedp.Run(ctx, chromedp.Evaluate[scrollStep](scrollScript, chromedp.EvalAwaitPromise))
		if err != nil {
			return ctxErrOr(ctx, nil)
		}
		res.Scrolls++
		if err := rec.settle(ctx, c.cfg.StepQuiet); err != nil {
			return err
		}
		usage.sample()
		if st.End && st.Height == height {
			break
		}
		height = st.Height
	}
	if res.Scrolls >= c.cfg.MaxScrolls {
		rec.mu.Lock()
		rec.cap(CapScrolls)
		rec.mu.Unlock()
	}
	if err := rec.settle(ctx, c.cfg.Quiet); err != nil {
		return err
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Links  []string `json:"links"`
		Routes []string `json:"routes"`
	}](fmt.Sprintf(linksScript, c.cfg.MaxLinks)))
	if err != nil {
		return ctxErrOr(ctx, nil)
	}
	res.Routes = httpOnly(found.Routes)
	res.Links = httpOnly(append(found.Links, found.Routes...))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window.scrollTo(0, 0), true")); err != nil {
		return ctxErrOr(ctx, nil)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return ctxErrOr(ctx, nil)
	}
	res.Screenshot = shot
	return nil
}

// ctxErrOr returns ctx's error if it has ended, else err.
func ctxErrOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// httpOnly returns the absolute http(s) URLs of urls, sorted, without
// duplicates or fragments.
func httpOnly(urls []string) []string {
	var out []string
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		out = append(out, u.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}
