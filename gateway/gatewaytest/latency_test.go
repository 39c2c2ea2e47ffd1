package gatewaytest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/herod-archive/herod/gateway"
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

// delayedGateway serves a gateway over a on two loopback listeners
// reached through delay proxies, whose addresses are its origins, and
// returns the proxies' base URLs (UI, content).
func delayedGateway(tb testing.TB, a gateway.Archive, frameless bool, delay time.Duration) (ui, content string) {
	tb.Helper()
	var proxies [2]*delayProxy
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns[i] = ln
		proxies[i] = newDelayProxy(tb, ln.Addr().String(), delay)
	}
	port := func(p *delayProxy) string { return strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port) }
	gw, err := gateway.New(gateway.Config{Archive: a, Frameless: frameless,
		UIOrigin: ":" + port(proxies[0]), ContentOrigin: ":" + port(proxies[1])})
	if err != nil {
		tb.Fatal(err)
	}
	for i, h := range []http.Handler{gw.UI(), gw.Content()} {
		srv := &httptest.Server{Listener: lns[i], Config: &http.Server{Handler: h}}
		srv.Start()
		tb.Cleanup(srv.Close)
	}
	return "http://" + proxies[0].ln.Addr().String(), "http://" + proxies[1].ln.Addr().String()
}

// loadTime opens url in a new tab and returns the time to its load event
// (the page, its frames and their embedded objects). A cold load opens
// the tab in a browser context of its own: no connection, cache or
// cookie of an earlier load.
func (c *chrome) loadTime(tb testing.TB, url string, cold bool) time.Duration {
	tb.Helper()
	var opts []chromedp.ContextOption
	if cold {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	tab, cancel := chromedp.NewContext(c.ctx, opts...)
	defer cancel()
	ctx, cancelT := context.WithTimeout(tab, 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		tb.Fatalf("load %s: %v", url, err)
	}
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestReplayLatency measures what framing costs a reader (issue 18): the
// time from opening an archived page to its load event, in headless
// Chromium, through links with a round-trip time of 0, 20 and 80 ms
// (HEROD_RTT_MS, a comma-separated list) between the browser and the
// gateway. The base is the page alone, served with its banner by one
// origin (a frameless gateway's content origin: what the single-origin
// gateway served); framed is the framed replay page a reader opens on the
// UI origin, its content frame, and the frame's embedded objects. Cold
// views start in a fresh browser context (a reader's first view: new
// connections to both origins); warm views reuse one (the reader's next
// views). It runs when HEROD_REPLAY_LATENCY is set (HEROD_VIEWS views of
// each kind, default 9) and fails only when a page does not load.
func TestReplayLatency(t *testing.T) {
	if os.Getenv("HEROD_REPLAY_LATENCY") == "" {
		t.Skip("the replay latency benchmark runs when HEROD_REPLAY_LATENCY is set")
	}
	rtts := []int{0, 20, 80}
	if s := os.Getenv("HEROD_RTT_MS"); s != "" {
		rtts = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				t.Fatalf("HEROD_RTT_MS=%q: want milliseconds, comma-separated", s)
			}
			rtts = append(rtts, n)
		}
	}
	views := 9
	if s := os.Getenv("HEROD_VIEWS"); s != "" {
		var err error
		if views, err = strconv.Atoi(s); err != nil || views < 1 {
			t.Fatalf("HEROD_VIEWS=%q: want a number of views", s)
		}
	}
	br := newChrome(t)
	m, pages := benchPages(t)
	const ts = "20240102"
	for _, rtt := range rtts {
		delay := time.Duration(rtt) * time.Millisecond / 2
		_, single := delayedGateway(t, m, true, delay)
		ui, _ := delayedGateway(t, m, false, delay)
		for _, cold := range []bool{true, false} {
			var base, framed []time.Duration
			if !cold { // one view of each first: the connections a reader already has
				br.loadTime(t, single+"/web/"+ts+"/"+pages[0], false)
				br.loadTime(t, ui+"/web/"+ts+"/"+pages[0], false)
			}
			for i := range views {
				p := pages[(i*7+1)%len(pages)]
				// Alternate which goes first, so that neither always
				// meets a machine the other has just warmed.
				if i%2 == 0 {
					base = append(base, br.loadTime(t, single+"/web/"+ts+"/"+p, cold))
					framed = append(framed, br.loadTime(t, ui+"/web/"+ts+"/"+p, cold))
				} else {
					framed = append(framed, br.loadTime(t, ui+"/web/"+ts+"/"+p, cold))
					base = append(base, br.loadTime(t, single+"/web/"+ts+"/"+p, cold))
				}
			}
			kind := "warm"
			if cold {
				kind = "cold"
			}
			// The machine is shared: a view's time swings with the load
			// of others. Report the medians, the fastest views (the
			// least disturbed) and the median of the differences within
			// pairs (a pair's two views ran back to back).
			diffs := make([]time.Duration, len(base))
			for i := range base {
				diffs[i] = framed[i] - base[i]
			}
			mb, mf, md := median(base), median(framed), median(diffs)
			fb, ff := slices.Min(base), slices.Min(framed)
			line := fmt.Sprintf("latency: rtt %d ms %s views %d median page-alone %.1f ms framed %.1f ms framed/alone %.3f; "+
				"fastest %.1f / %.1f ms framed/alone %.3f; paired difference %+.1f ms (%+.2f RTT)",
				rtt, kind, views, ms(mb), ms(mf), ms(mf)/ms(mb), ms(fb), ms(ff), ms(ff)/ms(fb), ms(md), ms(md)/float64(max(rtt, 1)))
			t.Log(line)
			fmt.Println(line)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
