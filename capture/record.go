package capture

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// recorder keeps what the tab's events say: the exchanges, what is in
// flight, the caps. Events are handled by one goroutine (run), in the
// order they came, since a listener may not call the browser.
type recorder struct {
	cfg *Config
	px  *proxy

	mu        sync.Mutex
	ex        []*Exchange
	byID      map[network.RequestID]*Exchange
	hops      map[network.RequestID]int           // requests sent under the ID
	sent      map[network.RequestID][]http.Header // extra-info headers, as they came
	inflight  map[network.RequestID]time.Time     // since when
	last      time.Time                           // last network event
	requests  int
	bytes     int64
	refused   []string
	downloads int
	capped    map[Cap]bool

	// queue holds the events listen hands over, for run; wake tells
	// run there are some. listen never blocks: a listener that blocks
	// stops chromedp's reading of the browser, and with it the answers
	// run waits for.
	qmu    sync.Mutex
	queue  []any
	lost   int
	wake   chan struct{}
	bodies sync.WaitGroup
}

// maxQueue bounds the events waiting for run; past it events are lost
// (counted) and the page counts as past its request cap.
const maxQueue = 100000

func newRecorder(cfg *Config, px *proxy) *recorder {
	return &recorder{
		cfg: cfg, px: px,
		byID:     map[network.RequestID]*Exchange{},
		hops:     map[network.RequestID]int{},
		sent:     map[network.RequestID][]http.Header{},
		inflight: map[network.RequestID]time.Time{},
		capped:   map[Cap]bool{},
		last:     time.Now(),
		wake:     make(chan struct{}, 1),
	}
}

// listen is the tab's event listener: it hands events over to run.
func (r *recorder) listen(ev any) {
	switch ev.(type) {
	case *fetch.EventRequestPaused, *network.EventRequestWillBeSent, *network.EventRequestWillBeSentExtraInfo, *network.EventResponseReceived,
		*network.EventLoadingFinished, *network.EventLoadingFailed, *page.EventJavascriptDialogOpening,
		*browser.EventDownloadWillBegin:
		r.qmu.Lock()
		if len(r.queue) < maxQueue {
			r.queue = append(r.queue, ev)
		} else {
			r.lost++
		}
		r.qmu.Unlock()
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// run handles events until ctx ends.
func (r *recorder) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.qmu.Lock()
		evs := r.queue
		r.queue = nil
		lost := r.lost
		r.qmu.Unlock()
		if lost > 0 {
			r.mu.Lock()
			r.cap(CapRequests)
			r.mu.Unlock()
		}
		for _, ev := range evs {
			if ctx.Err() != nil {
				return
			}
			r.handle(ctx, ev)
		}
	}
}

func (r *recorder) cap(c Cap) {
	r.capped[c] = true
}

func (r *recorder) handle(ctx context.Context, ev any) {
	switch e := ev.(type) {
	case *fetch.EventRequestPaused:
		r.paused(ctx, e)
	case *page.EventJavascriptDialogOpening:
		_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	case *browser.EventDownloadWillBegin:
		r.mu.Lock()
		r.downloads++
		r.mu.Unlock()
	case *network.EventRequestWillBeSent:
		r.mu.Lock()
		defer r.mu.Unlock()
		r.last = time.Now()
		if e.RedirectResponse != nil {
			if prev := r.byID[e.RequestID]; prev != nil {
				r.response(prev, e.RedirectResponse)
			}
		}
		if !strings.HasPrefix(e.Request.URL, "http:") && !strings.HasPrefix(e.Request.URL, "https:") {
			return
		}
		x := &Exchange{
			URL: e.Request.URL, Method: e.Request.Method, RequestHeader: headers(e.Request.Headers),
			Time: time.UnixMicro(int64(e.WallTime.Float64() * 1e6)), Type: string(e.Type), id: e.RequestID,
		}
		r.hops[e.RequestID]++
		r.ex = append(r.ex, x)
		r.byID[e.RequestID] = x
		r.inflight[e.RequestID] = time.Now()
	case *network.EventRequestWillBeSentExtraInfo:
		// It may come before or after its requestWillBeSent; the two
		// meet when the result is made (sentHeader).
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.sent[e.RequestID]) < 2 {
			r.sent[e.RequestID] = append(r.sent[e.RequestID], headers(e.Headers))
		}
	case *network.EventResponseReceived:
		r.mu.Lock()
		defer r.mu.Unlock()
		r.last = time.Now()
		if x := r.byID[e.RequestID]; x != nil {
			r.response(x, e.Response)
		}
	case *network.EventLoadingFailed:
		r.mu.Lock()
		defer r.mu.Unlock()
		r.last = time.Now()
		delete(r.inflight, e.RequestID)
		if x := r.byID[e.RequestID]; x != nil {
			x.Err = e.ErrorText
		}
	case *network.EventLoadingFinished:
		r.mu.Lock()
		r.last = time.Now()
		x := r.byID[e.RequestID]
		if x == nil {
			delete(r.inflight, e.RequestID)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		// The body is asked for at once, while the browser keeps it;
		// the request counts as in flight until it is in.
		r.bodies.Add(1)
		go func() {
			defer r.bodies.Done()
			r.body(ctx, e.RequestID, x, int64(e.EncodedDataLength))
		}()
	}
}

// sentHeader returns the headers the browser reported sending for x:
// those of the one extra-info event of x's request ID when the ID had
// one request (a redirect's hops share the ID, and a hop answered from
// the cache reports none, so which hop an event belongs to is not
// told). r.mu is held.
func (r *recorder) sentHeader(x *Exchange) http.Header {
	if r.hops[x.id] != 1 || len(r.sent[x.id]) != 1 {
		return nil
	}
	return r.sent[x.id][0]
}

// response records resp as x's response. r.mu is held.
func (r *recorder) response(x *Exchange, resp *network.Response) {
	x.Status = int(resp.Status)
	x.Received = time.Now()
	x.Header = headers(resp.Headers)
}

// body fetches the body of a finished request into x, within the byte cap.
func (r *recorder) body(ctx context.Context, id network.RequestID, x *Exchange, encoded int64) {
	defer func() {
		r.mu.Lock()
		delete(r.inflight, id)
		r.last = time.Now()
		r.mu.Unlock()
	}()
	r.mu.Lock()
	over := r.bytes+max(encoded, 0) > r.cfg.MaxBytes
	if over {
		x.Truncated = "length"
		r.cap(CapBytes)
	}
	r.mu.Unlock()
	if over || x.Status/100 == 3 {
		return
	}
	res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		// A response without a body (204, 205), or one the browser did
		// not keep: the latter is not recorded (Err says why).
		if x.Status == http.StatusNoContent || x.Status == http.StatusResetContent {
			x.Body = []byte{}
			return
		}
		r.cfg.Logger.Debug("capture: no body", "url", x.URL, "err", err)
		x.Err = "body not kept by the browser: " + err.Error()
		return
	}
	if r.bytes+int64(len(res.Body)) > r.cfg.MaxBytes {
		x.Truncated = "length"
		r.cap(CapBytes)
		return
	}
	r.bytes += int64(len(res.Body))
	x.Body = res.Body
}

// paused decides on a request the browser paused before sending it.
func (r *recorder) paused(ctx context.Context, e *fetch.EventRequestPaused) {
	u := e.Request.URL
	err := checkURL(ctx, u, r.cfg.AllowPrivate, r.cfg.Resolver)
	r.mu.Lock()
	if err == nil {
		switch {
		case r.capped[CapBytes]:
			err = fmt.Errorf("capture: byte cap of %d reached", r.cfg.MaxBytes)
		case r.requests >= r.cfg.MaxRequests:
			r.cap(CapRequests)
			err = fmt.Errorf("capture: request cap of %d reached", r.cfg.MaxRequests)
		default:
			r.requests++
		}
	} else if len(r.refused) < r.cfg.MaxRequests {
		r.refused = append(r.refused, u)
	}
	r.mu.Unlock()
	if err != nil {
		r.cfg.Logger.Debug("capture: request refused", "url", u, "err", err)
		_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
		return
	}
	if pu, err := url.Parse(u); err == nil {
		r.px.permit(pu)
	}
	_, _ = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
}

// settle waits until no request has been in flight for quiet, or ctx
// ends. A request in flight for longer than Config.Stall no longer
// counts: its answer goes elsewhere (a worker's script is answered to
// the worker) or never ends (a long poll, an event stream).
func (r *recorder) settle(ctx context.Context, quiet time.Duration) error {
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	for {
		r.mu.Lock()
		busy := 0
		for _, since := range r.inflight {
			if time.Since(since) < r.cfg.Stall {
				busy++
			}
		}
		idle := busy == 0 && time.Since(r.last) >= quiet
		r.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// headers turns the browser's header map into an http.Header; the
// browser joins repeated headers with newlines.
func headers(h network.Headers) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		for _, line := range strings.Split(s, "\n") {
			out.Add(k, line)
		}
	}
	return out
}
