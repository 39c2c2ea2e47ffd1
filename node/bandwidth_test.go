package node

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/throttle"
)

// bigBody is the size of the one page the bandwidth tests crawl.
const bigBody = 400_000

// bigSite serves one page of bigBody random bytes (incompressible, no
// links) on loopback.
func bigSite(t *testing.T) string {
	t.Helper()
	body := make([]byte, bigBody)
	rand.Read(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big.bin" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/big.bin"
}

// capRing starts a ring of two nodes with cfg's caps that crawl from
// loopback, with no replication round of their own.
func capRing(ctx context.Context, t *testing.T, cfg Config) *LocalRing {
	t.Helper()
	cfg.VirtualServers = 2
	cfg.StabilizeInterval = 100 * time.Millisecond
	cfg.FlushInterval = 20 * time.Millisecond
	cfg.ReplicationInterval = -1
	cfg.Crawl = crawl.Config{HostRate: 1000, AllowPrivate: loopback}
	lr := startStableRing(ctx, t, t.TempDir(), 2, cfg)
	t.Cleanup(func() { lr.Close() })
	return lr
}

// crawlAndReplicate seeds the big page, waits for the crawl, then runs a
// replication round on its owner and waits until the other node holds
// the version; it returns both durations.
func crawlAndReplicate(ctx context.Context, t *testing.T, lr *LocalRing, url string) (crawlTook, replTook time.Duration) {
	t.Helper()
	start := time.Now()
	if err := lr.Nodes[0].Seed(ctx, []string{url}); err != nil {
		t.Fatal(err)
	}
	var owner, other *Node
	for owner == nil {
		for i, n := range lr.Nodes {
			if n.Store().Stats().Versions == 1 {
				owner, other = n, lr.Nodes[1-i]
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the page was not crawled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	crawlTook = time.Since(start)
	// The directory sums replication compares take the version in a
	// moment after the store counts it.
	for {
		if sum, err := owner.Store().RangeSum(ctx, id.ID{}, id.ID{}); err == nil && sum.Count == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the version is not in the archive's sums")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start = time.Now()
	if err := owner.Replicate(ctx); err != nil {
		t.Fatal(err)
	}
	for other.Store().Stats().Versions == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the version was not replicated: owner %+v\nother %+v", owner.ReplicationStats(), other.ReplicationStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return crawlTook, time.Since(start)
}

// TestBandwidthCaps crawls a 400 kB page on a two-node ring and
// replicates it, uncapped and then under each cap, and checks that each
// cap bounds the transfer it applies to: the download cap the crawl and
// the replica's pull (at the replication share of it), the upload cap the
// owner's reply (at its share). A transfer cannot beat its cap by more
// than the bucket's burst; the upper bounds are loose, for a loaded
// machine.
func TestBandwidthCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 400 kB at capped rates for about 10 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := bigSite(t)
	minTime := func(rate int64) time.Duration {
		burst := min(max(rate/4, throttle.MinBurst), throttle.MaxBurst)
		return time.Duration(float64(bigBody-burst) / float64(rate) * float64(time.Second))
	}

	baseCrawl, baseRepl := crawlAndReplicate(ctx, t, capRing(ctx, t, Config{}), url)
	t.Logf("uncapped: crawl %v, replication %v", baseCrawl, baseRepl)

	t.Run("download", func(t *testing.T) {
		const rate = 400_000 // crawl: 1 s; replication at share 0.25: 4 s
		c, r := crawlAndReplicate(ctx, t, capRing(ctx, t, Config{DownloadRate: rate, ReplicationShare: 0.25}), url)
		t.Logf("download cap %d B/s, share 0.25: crawl %v (%.1f× uncapped), replication %v (%.1f× uncapped)",
			rate, c, c.Seconds()/baseCrawl.Seconds(), r, r.Seconds()/baseRepl.Seconds())
		if want := minTime(rate); c < want || c > want+5*time.Second {
			t.Errorf("crawl took %v under a %d B/s cap, want %v to %v", c, rate, want, want+5*time.Second)
		}
		if want := minTime(rate / 4); r < want || r > want+5*time.Second {
			t.Errorf("replication took %v under a %d B/s share, want %v to %v", r, rate/4, want, want+5*time.Second)
		}
	})
	t.Run("upload", func(t *testing.T) {
		const rate = 400_000 // replication at share 0.5: 2 s; the crawl is not capped
		c, r := crawlAndReplicate(ctx, t, capRing(ctx, t, Config{UploadRate: rate, ReplicationShare: 0.5}), url)
		t.Logf("upload cap %d B/s, share 0.5: crawl %v, replication %v (%.1f× uncapped)", rate, c, r, r.Seconds()/baseRepl.Seconds())
		if want := minTime(rate / 2); r < want || r > want+5*time.Second {
			t.Errorf("replication took %v under a %d B/s share, want %v to %v", r, rate/2, want, want+5*time.Second)
		}
		if c > minTime(rate/2) {
			t.Errorf("the upload cap slowed the crawl: %v", c)
		}
	})
}
