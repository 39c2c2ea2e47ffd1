package capture

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"image/png"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/spaweb"
)

// loopback is the address the sample sites listen on and the only
// special-purpose address the tests let the browser reach.
var loopback = netip.MustParsePrefix("127.0.0.1/32")

// noNames is a resolver that resolves no name: the tests reach loopback
// addresses only, and must not ask a DNS server.
var noNames = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("the tests resolve no names")
}}

// newCapturer returns a Capturer for the Chromium browsertest finds (or
// skips t), allowed to reach 127.0.0.1 only.
func newCapturer(t *testing.T, edit func(*Config)) *Capturer {
	t.Helper()
	cfg := Config{
		ExecPath:     browsertest.Find(t).Path(),
		NoSandbox:    os.Geteuid() == 0,
		AllowPrivate: []netip.Prefix{loopback},
		TempDir:      t.TempDir(),
		Resolver:     noNames,
		Timeout:      30 * time.Second,
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startSite(t *testing.T, cfg spaweb.Config) *spaweb.Site {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := spaweb.New(cfg)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewNeedsBrowser(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without ExecPath did not fail")
	}
}

// TestCaptureSPA renders the sample application's entry point and checks
// what a reader's visit needs is recorded: the script's fetches, the
// whole infinite list and its lazy images, the font; the links only
// the script writes and the route it pushed; a screenshot of the
// viewport; and that the exchanges stored in an archive read back as
// captured in a browser.
func TestCaptureSPA(t *testing.T) {
	tmp := t.TempDir()
	c := newCapturer(t, func(cfg *Config) { cfg.TempDir = tmp })
	const pages = 3
	site := startSite(t, spaweb.Config{ScrollPages: pages})
	res, err := c.Capture(context.Background(), site.URL()+"/")
	if err != nil {
		t.Fatal(err)
	}
	checkGone(t, tmp)
	if len(res.Capped) != 0 {
		t.Errorf("capped %v on the sample site", res.Capped)
	}
	got := map[string]*Exchange{}
	for i, x := range res.Exchanges {
		got[x.URL] = &res.Exchanges[i]
	}
	for _, p := range []string{"/", "/api/nav.json", "/api/page/home.json", "/static/spa.ttf?v=3",
		"/img/lazy-4.png", "/img/observed-5.png", "/api/feed?page=2", "/img/item-17.png"} {
		x := got[site.URL()+p]
		if x == nil || x.Status != 200 || len(x.Body) == 0 {
			t.Errorf("%s not recorded with its body: %+v", p, x)
		}
	}
	for _, h := range append(site.HiddenPages(), site.URL()+"/app/item-17") {
		if !slices.Contains(res.Links, h) {
			t.Errorf("link %s written by the script not found in %q", h, res.Links)
		}
	}
	if !slices.Equal(res.Routes, []string{site.URL() + "/app/home"}) {
		t.Errorf("routes %q, want the pushed /app/home", res.Routes)
	}
	img, err := png.Decode(bytes.NewReader(res.Screenshot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Errorf("screenshot of %v, want the 1280×800 viewport", b)
	}

	store, err := archive.Open(t.TempDir(), archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	caps := res.ToArchive()
	for _, ac := range caps {
		if _, _, err := store.Put(context.Background(), ac); err != nil {
			t.Fatalf("put %s: %v", ac.URL, err)
		}
	}
	feed := site.URL() + "/api/feed?page=2"
	_, ac, err := store.Get(context.Background(), feed, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !ac.Browser || ac.Status != 200 || !bytes.Equal(ac.Body, got[feed].Body) {
		t.Errorf("archived %s: browser %v, status %d, body %q", feed, ac.Browser, ac.Status, ac.Body)
	}
	// The fetch's request head, as the browser reported sending it, is
	// kept: Accept-Encoding is among the headers as sent only.
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(ac.Request)))
	if err != nil {
		t.Fatalf("archived %s: request head %q: %v", feed, ac.Request, err)
	}
	if fu, _ := url.Parse(feed); req.Method != http.MethodGet || req.RequestURI != fu.RequestURI() || req.Host != fu.Host || req.UserAgent() == "" || req.Header.Get("Accept-Encoding") == "" {
		t.Errorf("archived %s: request head %q", feed, ac.Request)
	}
	t.Logf("%d exchanges, %d archived, %d links, %d scrolls, %v", len(res.Exchanges), len(caps), len(res.Links), res.Scrolls, res.Usage)
}
