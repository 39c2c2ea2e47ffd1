package node

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
)

// TestDiskFullPausesNode: a node whose data directory is a small tmpfs
// crawls a site of incompressible pages until its archive reaches its
// reserve. The crawl then pauses (status says "disk full") without
// fetching and discarding pages, the gateway keeps serving what is stored,
// and once the file system grows the node resumes by itself and archives
// every page; every version acknowledged before is still there. Needs
// root to mount tmpfs; skips otherwise.
func TestDiskFullPausesNode(t *testing.T) {
	if testing.Short() {
		t.Skip("a real node on a tmpfs in -short mode")
	}
	if os.Getuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "herod-test", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const pages, pageSize = 40, 512 << 10
	var mu sync.Mutex
	served := make(map[string]int)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/" {
			var b strings.Builder
			for i := range pages {
				fmt.Fprintf(&b, `<a href="/p%d">p%d</a>`, i, i)
			}
			fmt.Fprint(w, b.String())
			return
		}
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p%d", &i); err != nil {
			http.NotFound(w, r)
			return
		}
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		body := make([]byte, pageSize)
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(body)
	}))
	defer site.Close()

	lr, err := StartLocalRing(ctx, dir, 1, Config{VirtualServers: 1, NoSync: true, DiskReserve: 8 << 20, DictSamples: -1,
		Crawl: crawl.Config{HostRate: 1000, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	n := lr.Nodes[0]
	if err := n.Seed(ctx, []string{site.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	for n.Status().Crawl.Paused != "disk full" {
		if ctx.Err() != nil || n.Idle() {
			t.Fatalf("the crawl never paused for a full disk: %+v", n.Status().Crawl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := n.Status()
	stored := st.Archive.Versions
	if stored < 5 || stored > pages || st.Archive.Failed != "" || !st.Archive.DiskFull {
		t.Fatalf("at the pause: %d versions, failed %q, disk full %v", stored, st.Archive.Failed, st.Archive.DiskFull)
	}
	// Paused: once the fetches under way when the disk filled have ended
	// (their pages stay queued), no page is fetched for a whole second and
	// more (the crawler asks again every second).
	for n.Status().Crawl.InFlight > 0 {
		if ctx.Err() != nil {
			t.Fatal("fetches never ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	before := len(served)
	mu.Unlock()
	time.Sleep(1500 * time.Millisecond) // observing that nothing happens
	mu.Lock()
	after := len(served)
	mu.Unlock()
	if after != before {
		t.Fatalf("the paused node fetched %d more pages", after-before)
	}
	// The gateway serves a stored page meanwhile.
	resp, err := http.Get(n.ReplayURL() + "web/2id_/" + site.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("gateway on a full disk: %d", resp.StatusCode)
	}

	// Space returns: the operator grows the file system.
	if out, err := exec.Command("mount", "-o", "remount,size=64m", dir).CombinedOutput(); err != nil {
		t.Fatalf("resize the tmpfs: %v: %s", err, out)
	}
	grown := time.Now()
	for n.Status().Archive.Versions < pages+1 {
		if time.Since(grown) > time.Minute {
			t.Fatalf("a minute after space returned: %+v", n.Status().Crawl)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("paused at %d of %d versions; resumed and finished %.1fs after space returned", stored, pages+1, time.Since(grown).Seconds())
	if p := n.Status().Crawl.Paused; p != "" {
		t.Fatalf("still paused: %q", p)
	}
}
