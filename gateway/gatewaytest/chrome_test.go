package gatewaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/internal/browsertest"
)

// chrome is one headless Chromium driven over the DevTools protocol, for
// the measurements that need more than a DOM dump: the requests a page
// made and how they ended, screenshots, load times.
type chrome struct {
	ctx context.Context
}

// newChrome starts the Chromium browsertest.Find finds (or skips tb),
// with a fresh profile; it is closed when tb ends.
func newChrome(tb testing.TB) *chrome {
	tb.Helper()
	path := browsertest.Find(tb).Path()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.UserDataDir(tb.TempDir()), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("hide-scrollbars", true),
		// The UI and content origins are one site (one host, two ports);
		// keep their frames in one renderer so that one listener sees both.
		chromedp.Flag("disable-site-isolation-trials", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelA()
		tb.Fatalf("start chromium: %v", err)
	}
	tb.Cleanup(func() { cancel(); cancelA() })
	return &chrome{ctx: ctx}
}

// request is what a page asked for and how it ended.
type request struct {
	URL    string
	Status int64  // 0: failed or blocked before a response
	Type   string // the response's MIME type, as Chromium read it
	Failed string
}

// visit is one page load in a fresh tab.
type visit struct {
	Requests   []request // in order; a redirect's hops each count
	Load       time.Duration
	Screenshot image.Image
	FrameTop   int // the top of the framed replay's content frame, 0 live
}

// load opens pageURL in a new tab with a viewport of w×h (h more for the
// banner when framed is set: the content frame then is w×h), waits for
// the load event, for the network to be quiet for quiet and for the page
// to look the same in two screenshots quiet apart, and returns what the
// tab requested, the time to the load event and a screenshot of the page
// (of the content frame when framed).
func (c *chrome) load(tb testing.TB, pageURL string, w, h int64, framed bool, quiet time.Duration) visit {
	tb.Helper()
	return c.loadScrolled(tb, pageURL, w, h, framed, quiet, false)
}

// loadScrolled is load; with scroll set, once the network is quiet it
// scrolls the page (the content frame's document when framed) as a
// reader would, one viewport less 50 px at a time, letting two frames
// render and the network settle after each step; at the bottom it
// scrolls one viewport up and back (an infinite list whose end stayed in
// view loads its next page only when the end comes into view again),
// and stops when that brought nothing (or after maxScrollSteps), then
// goes back to the top before the screenshots: lazy images and an
// infinite list load on the way down.
func (c *chrome) loadScrolled(tb testing.TB, pageURL string, w, h int64, framed bool, quiet time.Duration, scroll bool) visit {
	tb.Helper()
	tab, cancel := chromedp.NewContext(c.ctx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(tab, 60*time.Second)
	defer cancelT()
	var mu sync.Mutex
	var reqs []request
	byID := map[network.RequestID]int{}
	// Requests in flight, with when they were sent. A worker's script and
	// the PDF viewer's page are answered to another DevTools target: the
	// tab never sees them end, so a request with no answer after
	// unanswered is no longer waited for.
	const unanswered = 3 * time.Second
	pending := map[network.RequestID]time.Time{}
	last := time.Now()
	if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		tb.Fatal(err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if i, ok := byID[e.RequestID]; ok && e.RedirectResponse != nil {
				reqs[i].Status = e.RedirectResponse.Status
			}
			byID[e.RequestID] = len(reqs)
			reqs = append(reqs, request{URL: e.Request.URL + e.Request.URLFragment})
			pending[e.RequestID] = time.Now()
		case *network.EventResponseReceived:
			if i, ok := byID[e.RequestID]; ok {
				reqs[i].Status, reqs[i].Type = e.Response.Status, e.Response.MimeType
			}
		case *network.EventLoadingFinished:
			delete(pending, e.RequestID)
		case *network.EventLoadingFailed:
			if i, ok := byID[e.RequestID]; ok {
				reqs[i].Failed = e.ErrorText + string(e.BlockedReason)
				if e.BlockedReason != "" || e.ErrorText != "" {
					reqs[i].Status = 0
				}
			}
			delete(pending, e.RequestID)
		default:
			return
		}
		last = time.Now()
	}); err != nil {
		tb.Fatal(err)
	}
	vh := h
	if framed {
		vh = h + 200 // measured below, then set exactly
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, vh)); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		tb.Fatalf("load %s: %v", pageURL, err)
	}
	v := visit{Load: time.Since(start)}
	waitQuiet := func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			done := time.Since(last) >= quiet
			for _, sent := range pending {
				done = done && time.Since(sent) >= unanswered
			}
			mu.Unlock()
			if done {
				return
			}
			time.Sleep(quiet / 4)
		}

	}
	waitQuiet()
	if framed {
		top, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.getElementById("herod-frame").getBoundingClientRect().top`))
		if err != nil {
			tb.Fatalf("%s: no content frame: %v", pageURL, err)
		}
		v.FrameTop = int(top + 0.5)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h+int64(v.FrameTop))); err != nil {
			tb.Fatal(err)
		}
		waitQuiet()
	}
	if scroll {
		scrollThrough(tb, ctx, framed, waitQuiet)
	}
	// A quiet network does not mean a settled page: a script may still
	// be between a response and the request it leads to (on a loaded
	// machine, for longer than quiet). The page is settled when two
	// screenshots, quiet apart, are the same.
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.Fatal(err)
	}
	for range 10 {
		time.Sleep(quiet)
		waitQuiet()
		next, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			tb.Fatal(err)
		}
		if bytes.Equal(next, shot) {
			break
		}
		shot = next
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		tb.Fatal(err)
	}
	if framed {
		if si, ok := img.(interface {
			SubImage(image.Rectangle) image.Image
		}); ok {
			img = si.SubImage(image.Rect(0, v.FrameTop, int(w), v.FrameTop+int(h)))
		}
	}
	v.Screenshot = img
	mu.Lock()
	v.Requests = append([]request(nil), reqs...)
	mu.Unlock()
	return v
}

// pixelDiff returns the share of pixels of a and b that differ by more
// than a small tolerance in any channel (1 when their sizes differ).
func pixelDiff(a, b image.Image) float64 {
	ra, rb := a.Bounds(), b.Bounds()
	if ra.Dx() != rb.Dx() || ra.Dy() != rb.Dy() || ra.Dx() == 0 {
		return 1
	}
	const tol = 8 << 8
	diff := 0
	for y := range ra.Dy() {
		for x := range ra.Dx() {
			r1, g1, b1, _ := a.At(ra.Min.X+x, ra.Min.Y+y).RGBA()
			r2, g2, b2, _ := b.At(rb.Min.X+x, rb.Min.Y+y).RGBA()
			if absDiff(r1, r2) > tol || absDiff(g1, g2) > tol || absDiff(b1, b2) > tol {
				diff++
			}
		}
	}
	return float64(diff) / float64(ra.Dx()*ra.Dy())
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// hostOf returns the host:port of a URL, "" if it has none.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// maxScrollSteps bounds the scroll steps of loadScrolled.
const maxScrollSteps = 60

// scrollTo scrolls the document to the offset the expression given
// computes from e (the scrolling element), lets two frames render and
// returns its scroll offset before and after, and its height before.
const scrollTo = `(function(to){
  var e = document.scrollingElement || document.documentElement;
  var before = e.scrollTop, height = e.scrollHeight;
  e.scrollTop = to(e);
  return new Promise(function(done){
    requestAnimationFrame(function(){ requestAnimationFrame(function(){ done([before, e.scrollTop, height]); }); });
  });
})`

// scrollThrough scrolls the tab's page, or with framed the document of
// its one frame, to its end and back to the top (see loadScrolled),
// calling settle after each step. It evaluates in an isolated world of
// the frame, which shares the document but none of the page's script
// state.
func scrollThrough(tb testing.TB, ctx context.Context, framed bool, settle func()) {
	tb.Helper()
	tree, err := chromedp.Call(ctx, page.GetFrameTree, struct{}{})
	if err != nil {
		tb.Fatalf("frame tree: %v", err)
	}
	frame := tree.FrameTree
	if framed {
		if len(frame.ChildFrames) == 0 {
			tb.Fatal("scroll: the framed page has no frame")
		}
		frame = frame.ChildFrames[0]
	}
	world, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame.Frame.ID, WorldName: "herod-test-scroll"})
	if err != nil {
		tb.Fatalf("isolated world: %v", err)
	}
	eval := func(expr string, out any) {
		tb.Helper()
		yes := true
		res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ContextID: world.ExecutionContextID, ReturnByValue: &yes, AwaitPromise: &yes})
		if err == nil && res.ExceptionDetails != nil {
			err = fmt.Errorf("%s", res.ExceptionDetails.Text)
		}
		if err == nil && out != nil {
			err = json.Unmarshal([]byte(res.Result.Value), out)
		}
		if err != nil {
			tb.Fatalf("scroll: %v", err)
		}
	}
	move := func(to string) (st [3]float64) {
		eval(scrollTo+"(function(e){return "+to+"})", &st)
		settle()
		return st
	}
	lastHeight, bounced := -1.0, false
	for range maxScrollSteps {
		st := move("e.scrollTop + Math.max(innerHeight - 50, 50)")
		if st[2] != lastHeight {
			bounced = false
		}
		if st[1] == st[0] && st[2] == lastHeight {
			if bounced {
				break
			}
			move("Math.max(0, e.scrollTop - innerHeight)")
			bounced = true
		}
		lastHeight = st[2]
	}
	move("0")
}
