package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// egressStore is a real store of n incompressible captures of size bytes
// each (their export is as large gzipped as raw).
func egressStore(t *testing.T, n, size int) *archive.Store {
	t.Helper()
	st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, DictSamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	when := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		body := make([]byte, size)
		rand.Read(body)
		c := archive.Capture{URL: fmt.Sprintf("http://example.com/%d.bin", i), Time: when, Status: 200,
			Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: body}
		if _, _, err := st.Put(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// timedGet fetches url through a real connection and returns the body's
// size and the time from before the request to its last byte.
func timedGet(t *testing.T, url string) (int64, time.Duration, *http.Response) {
	t.Helper()
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return n, time.Since(start), resp
}

// TestExportRateHolds: an export of a real store through a real HTTP
// server, capped at ExportRate, is received at no more than the cap plus
// 10%, and not far below it.
//
// Why it cannot flake: the client's bucket starts full (exportBurst
// bytes) when the request arrives, after the client's clock starts, and
// gains ExportRate bytes a second; the server writes no byte before it
// holds its token, so the client has received at most burst + rate*T
// bytes T after it asked, whatever the load. With a 3 MB export at
// 1 MB/s, T is at least 2.9 s and burst/T at most 3.5% of the rate: the
// upper bound holds by construction. A loaded machine can only make the
// transfer slower, so the lower bound is loose: half the cap, or half of
// what the same export achieves uncapped in the same run when the
// machine cannot even do the cap.
func TestExportRateHolds(t *testing.T) {
	const rate = 1_000_000
	st := egressStore(t, 48, 64<<10)
	run := func(r int64) (int64, time.Duration, *Server) {
		d := serveDirect(t, storeExporter{fakeArchive: newFake(), st: st}, func(c *Config) { c.Limits.ExportRate = r })
		n, took, resp := timedGet(t, d.ui+"/export?host=example.com")
		if resp.StatusCode != 200 || resp.Trailer.Get(TrailerExportStatus) != "complete" {
			t.Fatalf("export: %d %q", resp.StatusCode, resp.Trailer.Get(TrailerExportStatus))
		}
		return n, took, d.s
	}
	fn, ftook, _ := run(-1)
	free := float64(fn) / ftook.Seconds()
	n, took, s := run(rate)
	got := float64(n) / took.Seconds()
	ratio := got / rate
	t.Logf("%d bytes at a cap of %d B/s: %.0f B/s in %v, ratio %.3f; uncapped %.0f B/s (%.1f× the cap)", n, rate, got, took.Round(time.Millisecond), ratio, free, free/rate)
	if n < 3_000_000 {
		t.Fatalf("export of %d bytes, want at least 3 MB", n)
	}
	if ratio > 1.10 {
		t.Errorf("received at %.3f× the cap, want at most 1.10", ratio)
	}
	if floor := min(rate, free) / 2; got < floor {
		t.Errorf("received at %.0f B/s, want at least %.0f", got, floor)
	}
	if st := s.Stats(); st.PacedSeconds <= 0 {
		t.Errorf("paced %v s, want > 0", st.PacedSeconds)
	}
}

// TestCDXPaced: a CDX answer is paced to the client's ExportRate too.
func TestCDXPaced(t *testing.T) {
	const rate = 60_000
	a := &listingArchive{fakeArchive: newFake()}
	for i := range 600 {
		a.add(t, fmt.Sprintf("http://example.com/a-rather-long-path/number/%06d", i), "20240501000000", 200, "text/html", "x")
	}
	d := serveDirect(t, a, func(c *Config) { c.Limits.ExportRate = rate })
	n, took, resp := timedGet(t, d.ui+"/cdx?url=example.com/&matchType=prefix")
	if resp.StatusCode != 200 {
		t.Fatalf("cdx: %d", resp.StatusCode)
	}
	// At most the bucket's burst plus the rate's bytes arrive in took.
	if burst := int64(exportBurst(rate)); n < 2*burst {
		t.Fatalf("cdx of %d bytes, want at least %d to measure", n, 2*burst)
	}
	t.Logf("cdx: %d bytes in %v", n, took)
	if min := time.Duration(float64(n-int64(exportBurst(rate))) / rate * float64(time.Second)); took < min {
		t.Errorf("cdx of %d bytes took %v, want at least %v", n, took, min)
	}
}

// TestRequestRate: a client past its RequestRate is answered 429 with
// Retry-After while another client, and the node's own machine, are
// served; through a real proxy-like request path (a loopback connection
// that names the client in X-Forwarded-For, as a local proxy does).
func TestRequestRate(t *testing.T) {
	const burst = 3
	// One request per thousand seconds after the burst: no refill within
	// the test, however slow the machine.
	d := serveDirect(t, sampleArchive(t), func(c *Config) { c.Limits.RequestRate = 0.001; c.Limits.RequestBurst = burst })
	get := func(client string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, d.ui+"/", nil)
		if client != "" {
			req.Header.Set("X-Forwarded-For", client)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range burst {
		if r := get("203.0.113.1"); r.StatusCode != 200 {
			t.Fatalf("request %d of A: %d", i, r.StatusCode)
		}
	}
	r := get("203.0.113.1")
	if r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("request past A's burst: %d, want 429", r.StatusCode)
	}
	if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 900 {
		t.Errorf("Retry-After %q, want about 1000 s", r.Header.Get("Retry-After"))
	}
	if r := get("203.0.113.2"); r.StatusCode != 200 {
		t.Errorf("client B while A is limited: %d", r.StatusCode)
	}
	for i := range 2 * burst {
		if r := get(""); r.StatusCode != 200 {
			t.Fatalf("request %d from the node's machine: %d", i, r.StatusCode)
		}
	}
	if st := d.s.Stats(); st.Limited != 1 || st.Clients != 2 {
		t.Errorf("stats: limited %d clients %d, want 1 and 2", st.Limited, st.Clients)
	}
}

// TestRequestRefill: a limited client is served again once its bucket
// refills (an injected clock), and the Retry-After it got says when.
func TestRequestRefill(t *testing.T) {
	s := newServer(t, sampleArchive(t), func(c *Config) { c.Limits.RequestRate = 0.5; c.Limits.RequestBurst = 1 })
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s.clients.now = func() time.Time { return now }
	if w := askFrom(s, "192.0.2.7:1", "/"); w.Code != 200 {
		t.Fatalf("first: %d", w.Code)
	}
	w := askFrom(s, "192.0.2.7:1", "/")
	if w.Code != 429 || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("second: %d Retry-After %q, want 429 and 2", w.Code, w.Header().Get("Retry-After"))
	}
	now = now.Add(2 * time.Second)
	if w := askFrom(s, "192.0.2.7:1", "/"); w.Code != 200 {
		t.Errorf("after Retry-After: %d", w.Code)
	}
}

// TestClientTableBounded: a flood of addresses keeps at most MaxClients
// idle clients, forgetting the least recently seen; a client with a
// request in flight is never forgotten.
func TestClientTableBounded(t *testing.T) {
	s := newServer(t, sampleArchive(t), func(c *Config) {
		c.Limits.RequestRate = 1
		c.Limits.RequestBurst = 1
		c.Limits.MaxClients = 100
	})
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // no refill, however slow the machine
	s.clients.now = func() time.Time { return now }
	held, ok := s.clients.enter("198.51.100.9")
	if !ok {
		t.Fatal("enter")
	}
	for i := range 1000 {
		askFrom(s, fmt.Sprintf("10.%d.%d.1:5", i/256, i%256), "/")
	}
	st := s.Stats()
	if st.Clients > 101 || st.ClientsForgotten < 899 {
		t.Errorf("clients %d forgotten %d, want at most 101 and at least 899", st.Clients, st.ClientsForgotten)
	}
	s.clients.mu.Lock()
	kept := s.clients.m["198.51.100.9"] == held
	s.clients.mu.Unlock()
	if !kept {
		t.Error("the client with a request in flight was forgotten")
	}
	s.clients.leave(held)
	// The most recent address is remembered: its second request is 429.
	if w := askFrom(s, "10.3.231.1:5", "/"); w.Code != 429 {
		t.Errorf("most recent client's second request: %d, want 429", w.Code)
	}
}
