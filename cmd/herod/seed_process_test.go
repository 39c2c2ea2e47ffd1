package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
)

// TestProcessSeedRefusedThenAllowed runs the built herod: a node without
// --allow-private is seeded, through `herod seed --data` alone, with a
// site on loopback: seed prints it refused with the flag that changes it
// and exits 1. Restarted with the flag, the node is seeded with the same URL
// the same crawl day: seed prints it queued and the site is crawled;
// seeded once more, it is reported fetched today (issue 35: the refused URL was marked seen for the day and seeding it
// again did nothing for 24 hours).
func TestProcessSeedRefusedThenAllowed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs herod processes")
	}
	var hits atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><title>lan page</title><p>on the LAN</p>"))
	}))
	defer site.Close()
	r := newProcRing(t, 24*time.Hour)
	r.strict = true
	day := time.Now().Unix() / 86400
	p := r.start(nil, "")
	seed := func() (string, int) {
		t.Helper()
		out, err := exec.Command(r.bin, "seed", "--data", p.data, site.URL+"/").CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &ee):
			return string(out), ee.ExitCode()
		}
		t.Fatalf("herod seed: %v", err)
		return "", 0
	}
	out, code := seed()
	if code != 1 || !strings.Contains(out, "refused         "+site.URL+"/: ") || !strings.Contains(out, "--allow-private 127.0.0.1") {
		t.Fatalf("seed of a loopback site without --allow-private: exit %d\n%s", code, out)
	}
	r.remove(p, syscall.SIGTERM)
	r.extra = []string{"--allow-private", "127.0.0.1"}
	p = r.start(p, "")
	out, code = seed()
	if code != 0 || !strings.Contains(out, "queued          "+site.URL+"/") {
		t.Fatalf("seed after the restart with --allow-private: exit %d\n%s", code, out)
	}
	testwait.For(t, "the site crawled", 30*time.Second, func() bool { return hits.Load() > 0 })
	// Seeded once more that day: already fetched, and when next.
	testwait.For(t, "the capture stored", 30*time.Second, func() bool { return r.versions() > 0 })
	out, code = seed()
	if code != 0 || !strings.Contains(out, "fetched today   "+site.URL+"/ at ") || !strings.Contains(out, "next from") {
		t.Errorf("seed of a URL fetched today: exit %d\n%s", code, out)
	}
	if now := time.Now().Unix() / 86400; now != day {
		t.Skipf("the crawl day changed during the test (%d to %d)", day, now)
	}
}
