package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
)

// TestProcessesGatewayLoad is issue 34's memory acceptance with the built
// binary: two herod processes (k=1, so that about half the URLs are
// remote for either) crawl a local site of one 9 MiB page, 24 pages of 8
// MiB and small pages; then, for 30 s, 40 slow readers (4 KiB every 50
// ms) of the 9 MiB page and 24 readers looping over the 8 MiB pages, each
// request at an address of its own (no reply shared), load
// the first node's gateway while two readers ask for small pages. The
// node stays under 300 MB resident and the small pages are served at
// p50 ≤ 100 ms. Run with HEROD_PROCESS_TESTS=1 (about two minutes).
func TestProcessesGatewayLoad(t *testing.T) {
	if os.Getenv(processTestsEnv) == "" {
		t.Skip("set " + processTestsEnv + "=1 to load a herod process's gateway (two minutes)")
	}
	const large, bigSize, largeSize = 24, 9 << 20, 8 << 20
	bigPage := bytes.Repeat([]byte(`<p>archived <a href="/x">words</a> of a long page</p>`+"\n"), bigSize/52)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch p := r.URL.Path; {
		case p == "/big.html":
			w.Write(bigPage)
		case strings.HasPrefix(p, "/large/"):
			w.Write(bytes.Repeat([]byte("<p>a large capture "+p+"</p>\n"), largeSize/(24+len(p))))
		case strings.HasPrefix(p, "/small/"):
			fmt.Fprintf(w, "<html><title>%s</title><p>%s</p></html>", p, strings.Repeat("small page ", 500))
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	seeds := []string{site.URL + "/big.html"}
	var largeURLs, smallURLs []string
	for i := range large {
		largeURLs = append(largeURLs, fmt.Sprintf("%s/large/%d.html", site.URL, i))
	}
	for i := range 8 {
		smallURLs = append(smallURLs, fmt.Sprintf("%s/small/%d.html", site.URL, i))
	}
	seeds = append(append(seeds, largeURLs...), smallURLs...)

	r := newProcRing(t, time.Hour)
	r.extra = []string{"--replicas", "1"}
	first := r.start(nil, "")
	r.start(nil, first.multiaddr)
	time.Sleep(2 * time.Second)
	seed := exec.Command(r.bin, append([]string{"seed", "--node", "http://" + first.gateway + "/", "--data", first.data}, seeds...)...)
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("herod seed: %v\n%s", err, out)
	}
	testwait.For(t, "the crawl", 3*time.Minute, func() bool { return r.versions() >= int64(len(seeds)) })
	var held struct {
		Archive struct {
			Versions int64 `json:"versions"`
		} `json:"archive"`
	}
	getInto(first, "/api/status", &held)

	// The content origin, from the redirect of a raw replay.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ts := time.Now().UTC().Format("20060102150405")
	resp, err := noRedirect.Get("http://" + first.gateway + "/web/" + ts + "id_/" + seeds[0])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _, _ := strings.Cut(strings.TrimPrefix(resp.Header.Get("Location"), "http://"), "/")
	if loc == "" {
		t.Fatalf("no redirect to the content origin: %s", resp.Status)
	}
	content := "http://" + loc
	pid := first.cmd.Process.Pid
	before := procRSS(pid)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var peak atomic.Uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if v := procRSS(pid); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var slowServed, slowBusy, slowBytes atomic.Int64
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", loc)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET /web/%s/%s HTTP/1.1\r\nHost: %s\r\n\r\n", ts, seeds[0], loc)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Error(err)
				return
			}
			if resp.StatusCode != 200 {
				slowBusy.Add(1)
				return
			}
			slowServed.Add(1)
			buf := make([]byte, 4<<10)
			for {
				n, err := resp.Body.Read(buf)
				slowBytes.Add(int64(n))
				if err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	var largeOK, largeBusy atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for i := range large {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				// A new address each time, as a hostile reader would
				// ask, so that no reply is shared (any time before the
				// crawl selects its capture).
				past := time.Now().Add(-time.Duration(1+i*100000+j) * time.Second).UTC().Format("20060102150405")
				resp, err := client.Get(content + "/web/" + past + "/" + largeURLs[(i+j)%large])
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					largeOK.Add(1)
				case 503:
					largeBusy.Add(1)
				default:
					t.Errorf("large capture: %s", resp.Status)
					return
				}
			}
		}()
	}
	var mu sync.Mutex
	var lat []time.Duration
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				start := time.Now()
				resp, err := http.Get(content + "/web/" + ts + "/" + smallURLs[(2*j+i)%len(smallURLs)])
				if err != nil {
					t.Error(err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || err != nil {
					t.Errorf("small page: %s %v", resp.Status, err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	time.Sleep(30 * time.Second)
	close(stop)
	wg.Wait()
	if len(lat) == 0 {
		t.Fatal("no small page served")
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("node 1 holds %d of %d versions; RSS %d MB idle, peak %d MB under load (VmHWM %d MB, crawl included); "+
		"slow readers %d served (%d busy), %d MiB read; large captures %d served, %d busy; small pages p50 %v p99 %v (%d)",
		held.Archive.Versions, len(seeds), before/1e6, peak.Load()/1e6, procHWM(pid)/1e6,
		slowServed.Load(), slowBusy.Load(), slowBytes.Load()>>20, largeOK.Load(), largeBusy.Load(),
		p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), len(lat))
	if peak.Load() >= 300e6 {
		t.Errorf("peak RSS %d MB, want under 300 MB", peak.Load()/1e6)
	}
	if p50 > 100*time.Millisecond {
		t.Errorf("small pages p50 %v, want at most 100 ms", p50)
	}
	if slowServed.Load() == 0 || largeOK.Load() == 0 {
		t.Errorf("the load was not served: %d slow readers, %d large captures", slowServed.Load(), largeOK.Load())
	}
}

// procRSS returns the resident set of process pid (Linux), or 0.
func procRSS(pid int) uint64 { return procStatus(pid, "VmRSS:") }

// procHWM returns the peak resident set of process pid (Linux), or 0.
func procHWM(pid int) uint64 { return procStatus(pid, "VmHWM:") }

func procStatus(pid int, field string) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
