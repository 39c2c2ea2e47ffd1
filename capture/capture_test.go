package capture

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/browsertest"
	"github.com/herod-archive/herod/internal/spaweb"
)

// loopback is the address the sample sites listen on and the only
// special-purpose address the tests let the browser reach.
var loopback = netip.MustParsePrefix("127.0.0.1/32")

// noNames is a resolver that resolves no name: the tests reach loopback
// addresses only, and must not ask a DNS server (nor let the browser's
// own background requests out).
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

func TestCaptureSPA(t *testing.T) {
	c := newCapturer(t, nil)
	site := startSite(t, spaweb.Config{})
	res, err := c.Capture(context.Background(), site.URL()+"/")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Exchanges {
		t.Logf("%s %d %s %d bytes %s", x.Method, x.Status, x.URL, len(x.Body), x.Err)
	}
	t.Logf("links %q routes %q capped %v scrolls %d usage %+v shot %d refused %q", res.Links, res.Routes, res.Capped, res.Scrolls, res.Usage, len(res.Screenshot), res.Refused)
	t.Logf("site saw %v", site.Requests())
}
