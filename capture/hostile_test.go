package capture

import (
	"bytes"
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/spaweb"
)

// checkGone fails t when dir holds anything (the profile of the page is
// removed) or a process started with a profile in dir still runs (Linux).
func checkGone(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("--user-data-dir="+dir)) {
			t.Errorf("a browser process still runs: %s", bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("%d entries left in the capture's temporary directory, %s first", len(ents), ents[0].Name())
	}
}

// TestHostileEndlessScript: a page whose script never yields is given up
// at the time cap, with what was recorded until then, and its browser
// is gone.
func TestHostileEndlessScript(t *testing.T) {
	tmp := t.TempDir()
	const limit = 6 * time.Second
	c := newCapturer(t, func(cfg *Config) { cfg.Timeout = limit; cfg.TempDir = tmp })
	site := startSite(t, spaweb.Config{})
	start := time.Now()
	res, err := c.Capture(context.Background(), site.HostileURL("loop", ""))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > limit+5*time.Second {
		t.Errorf("took %v with a time cap of %v", took, limit)
	}
	if !slices.Contains(res.Capped, CapTime) {
		t.Errorf("capped %v, want the time cap", res.Capped)
	}
	if len(res.Exchanges) == 0 || res.Exchanges[0].Status != 200 {
		t.Errorf("the document was not recorded: %+v", res.Exchanges)
	}
	checkGone(t, tmp)
	t.Logf("endless script: %v, %d exchanges, capped %v", took, len(res.Exchanges), res.Capped)
}

// TestHostileEndlessScroll: an infinite list without end stops at the
// scroll cap, and a page past the request cap gets no more requests
// through.
func TestHostileEndlessScroll(t *testing.T) {
	site := startSite(t, spaweb.Config{})
	t.Run("scrolls", func(t *testing.T) {
		c := newCapturer(t, func(cfg *Config) { cfg.MaxScrolls = 6 })
		res, err := c.Capture(context.Background(), site.HostileURL("endless", ""))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(res.Capped, CapScrolls) || res.Scrolls != 6 {
			t.Errorf("capped %v after %d scrolls, want the scroll cap after 6", res.Capped, res.Scrolls)
		}
	})
	t.Run("requests", func(t *testing.T) {
		site.Reset()
		const max = 25
		c := newCapturer(t, func(cfg *Config) { cfg.MaxScrolls = 200; cfg.MaxRequests = max })
		res, err := c.Capture(context.Background(), site.HostileURL("endless", ""))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(res.Capped, CapRequests) {
			t.Errorf("capped %v, want the request cap", res.Capped)
		}
		n := 0
		for _, k := range site.Requests() {
			n += k
		}
		if n > max {
			t.Errorf("the site answered %d requests, cap %d", n, max)
		}
	})
}

// TestHostileInternalAddress: a page that asks for an internal address by
// every means it has (image, script, stylesheet, frame, fetch, a worker's
// fetch, a WebSocket) never reaches it: a listener on 127.0.0.2, which
// the capture is not allowed, accepts no connection.
func TestHostileInternalAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no listener on 127.0.0.2: %v", err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			nc.Close()
		}
	}()
	site := startSite(t, spaweb.Config{})
	c := newCapturer(t, nil)
	target := "http://" + ln.Addr().String() + "/secret"
	res, err := c.Capture(context.Background(), site.HostileURL("internal", target))
	if err != nil {
		t.Fatal(err)
	}
	// The capture has ended and its browser is gone: nothing more can
	// reach the listener.
	if n := conns.Load(); n != 0 {
		t.Errorf("the internal listener accepted %d connections", n)
	}
	if len(res.Refused) == 0 {
		t.Errorf("no request refused; exchanges %+v", res.Exchanges)
	}
	for _, x := range res.Exchanges {
		if x.Status != 0 && x.URL == target {
			t.Errorf("recorded a response from the internal address: %+v", x)
		}
	}
	if _, err := c.Capture(context.Background(), target); err == nil {
		t.Error("a capture of an internal address was not refused")
	}
	t.Logf("refused %d requests (%q) and %d connections (%q)", len(res.Refused), res.Refused, len(res.RefusedConns), res.RefusedConns)
}

// TestHostileFlood: a page that fires 1000 requests to an internal
// address at once has those the browser sends refused, none reaches it,
// and the capture ends normally, well within its time.
func TestHostileFlood(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no listener on 127.0.0.2: %v", err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			nc.Close()
		}
	}()
	site := startSite(t, spaweb.Config{})
	c := newCapturer(t, nil)
	res, err := c.Capture(context.Background(), site.HostileURL("flood", "http://"+ln.Addr().String()+"/x"))
	if err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the internal listener accepted %d connections", n)
	}
	if len(res.Capped) != 0 || len(res.Screenshot) == 0 {
		t.Errorf("capped %v, screenshot of %d bytes: the flood kept the capture from ending normally", res.Capped, len(res.Screenshot))
	}
	if len(res.Refused) == 0 {
		t.Error("no request refused")
	}
	t.Logf("flood: %v, %d refused listed", res.Usage.Wall, len(res.Refused))
}

// TestHostileDownload: a page that starts downloads (a download link
// clicked by script, a navigation to an attachment) writes no file.
func TestHostileDownload(t *testing.T) {
	tmp := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DOWNLOAD_DIR", filepath.Join(home, "Downloads"))
	site := startSite(t, spaweb.Config{})
	c := newCapturer(t, func(cfg *Config) { cfg.TempDir = tmp })
	res, err := c.Capture(context.Background(), site.HostileURL("download", ""))
	if err != nil {
		t.Fatal(err)
	}
	checkGone(t, tmp)
	for _, dir := range []string{home, tmp, os.TempDir()} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Base(p) == "file.bin" {
				t.Errorf("download written to %s", p)
			}
			return nil
		})
	}
	t.Logf("downloads started %d, site saw %v", res.Downloads, site.Requests())
}

// TestByteCap: past Config.MaxBytes of bodies a body is not kept (the
// sample site's 350 KiB font against a 64 KiB cap), the exchange and its
// archive capture say "length", and the page is marked as capped.
func TestByteCap(t *testing.T) {
	site := startSite(t, spaweb.Config{ScrollPages: 1})
	c := newCapturer(t, func(cfg *Config) { cfg.MaxBytes = 64 << 10 })
	res, err := c.Capture(context.Background(), site.URL()+"/")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Capped, CapBytes) {
		t.Errorf("capped %v, want the byte cap", res.Capped)
	}
	var total int
	for _, x := range res.Exchanges {
		total += len(x.Body)
	}
	if total > 64<<10 {
		t.Errorf("%d bytes of bodies kept, cap 64 KiB", total)
	}
	font := site.URL() + "/static/spa.ttf?v=3"
	i := slices.IndexFunc(res.ToArchive(), func(ac archive.Capture) bool { return ac.URL == font })
	if i < 0 {
		t.Fatalf("the font is not among the archive captures")
	}
	if ac := res.ToArchive()[i]; ac.Truncated != "length" || len(ac.Body) != 0 || !ac.Browser {
		t.Errorf("archived font: truncated %q, %d bytes, browser %v", ac.Truncated, len(ac.Body), ac.Browser)
	}
}

// TestHostileMemory: a page that holds ever more memory is stopped at the
// memory cap, well before the time cap, and its browser is gone.
func TestHostileMemory(t *testing.T) {
	tmp := t.TempDir()
	const limit = 40 * time.Second
	const memCap = 700 << 20
	c := newCapturer(t, func(cfg *Config) { cfg.Timeout = limit; cfg.TempDir = tmp; cfg.MaxMemory = memCap })
	site := startSite(t, spaweb.Config{})
	start := time.Now()
	res, err := c.Capture(context.Background(), site.HostileURL("memory", ""))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Capped, CapMemory) || slices.Contains(res.Capped, CapTime) {
		t.Errorf("capped %v, want the memory cap alone", res.Capped)
	}
	if took > limit*3/4 {
		t.Errorf("took %v: the memory cap did not stop the page before the time cap (%v)", took, limit)
	}
	if res.Usage.PeakMemory > memCap+512<<20 {
		t.Errorf("peak %d MiB, cap %d MiB", res.Usage.PeakMemory>>20, memCap>>20)
	}
	checkGone(t, tmp)
	t.Logf("memory hoard: %v, peak %d MiB, capped %v", took, res.Usage.PeakMemory>>20, res.Capped)
}
