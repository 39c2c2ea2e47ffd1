package gatewaytest

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/racebuild"
	"github.com/herod-archive/herod/internal/testwait"
)

// streamArchive is a store that serves its payloads as streams
// (gateway.Streamer), as the node does for the captures it holds.
type streamArchive struct{ *archive.Store }

func (a streamArchive) StreamAt(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Body, error) {
	v, err := a.Store.At(ctx, url, t)
	if err != nil {
		return v, nil, err
	}
	b, err := a.OpenBody(ctx, v)
	return v, b, err
}

var _ gateway.Streamer = streamArchive{}

// rawLoad is what one run of rawReaders measured.
type rawLoad struct {
	peakHeap, alloc   uint64 // peak heap in use; bytes allocated during the run
	streamed, spooled int64
	busy              int64 // readers answered 503 (no room in the memory budget)
	elapsed           time.Duration
}

// rawReaders serves a through a gateway to n concurrent readers of the
// raw (id_) capture of url, each reading it whole at 256 KiB every 10 ms
// and checking it is want, and measures the process's heap.
func rawReaders(t *testing.T, a gateway.Archive, n int, url string, at time.Time, want []byte) rawLoad {
	t.Helper()
	ui, content := listenPair(t)
	gw, err := gateway.New(gateway.Config{Archive: a, UIOrigin: ":" + lnPort(ui), ContentOrigin: ":" + lnPort(content),
		Limits: gateway.Limits{SpoolDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		ln net.Listener
		h  http.Handler
	}{{ui, gw.UI()}, {content, gw.Content()}} {
		srv := &http.Server{Handler: p.h, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(p.ln)
		defer srv.Close()
	}
	base := "http://" + content.Addr().String() + "/web/"
	sum := sha1.Sum(want)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	mem := sampleMemory(5 * time.Millisecond)
	start := time.Now()
	var wg sync.WaitGroup
	var bad, busy atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// An address of its own (a second after the capture for
			// each), as a hostile reader would ask: no reply shared.
			ts := gateway.FormatTimestamp(at.Add(time.Duration(i) * time.Second))
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Get(base + ts + "id_/" + url)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				busy.Add(1) // refused for load: allowed, never served wrong
				return
			}
			h := sha1.New()
			var got int64
			for {
				k, err := io.CopyN(h, resp.Body, 256<<10)
				got += k
				if err != nil || k == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if resp.StatusCode != http.StatusOK || got != int64(len(want)) || !bytes.Equal(h.Sum(nil), sum[:]) {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	mem.end()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if k := bad.Load(); k > 0 {
		t.Errorf("%d of %d readers did not get the capture whole", k, n)
	}
	st := gw.Stats()
	return rawLoad{peakHeap: mem.peakHeap - min(mem.peakHeap, before.HeapInuse), alloc: after.TotalAlloc - before.TotalAlloc,
		streamed: st.Streamed, spooled: st.Spooled, busy: busy.Load(), elapsed: time.Since(start)}
}

// TestRawReadersStreamed: 40 concurrent readers of the raw replay of a 9
// MiB capture, served from a store that streams payloads from its
// segment files and, in the same run, from the same store read whole and
// spooled (the path of archives that do not stream). Streamed, every
// reply is streamed and none spooled; the heap the readers add and the
// bytes allocated a reply are a fraction of the spooled path's (figures in the
// log, docs/limits.md). Readers refused for load (503) are counted, and
// allowed only on the spooled path.
func TestRawReadersStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("serves 2 × 40 readers of 9 MiB")
	}
	ctx := context.Background()
	st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, DictSamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	when := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	const url = "http://big.example/page.html"
	big := bytes.Repeat([]byte(`<p>archived <a href="/x">words</a> of a long page</p>`+"\n"), 9<<20/52)
	if _, _, err := st.Put(ctx, archive.Capture{URL: url, Time: when, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: big}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	whole := rawReaders(t, st, n, url, when, big)
	streamed := rawReaders(t, streamArchive{st}, n, url, when, big)
	// Bytes allocated per reply served (the spooled path may refuse some
	// for load).
	perReply := func(l rawLoad) float64 { return float64(l.alloc) / float64(max(l.streamed+l.spooled, 1)) }
	t.Logf("%d readers of a %d MiB raw capture: read whole and spooled: heap +%d MiB peak, %.1f MiB allocated a reply, %d spooled, %d busy, %v; "+
		"streamed: heap +%d MiB peak, %.1f MiB allocated a reply, %d streamed, %d busy, %v; ratio streamed/whole: heap %.3f, allocated a reply %.3f",
		n, len(big)>>20, whole.peakHeap>>20, perReply(whole)/(1<<20), whole.spooled, whole.busy, whole.elapsed.Round(time.Millisecond),
		streamed.peakHeap>>20, perReply(streamed)/(1<<20), streamed.streamed, streamed.busy, streamed.elapsed.Round(time.Millisecond),
		float64(streamed.peakHeap)/float64(max(whole.peakHeap, 1)), perReply(streamed)/perReply(whole))
	if streamed.streamed != n || streamed.spooled != 0 || streamed.busy != 0 {
		t.Errorf("streaming store: %d streamed, %d spooled, %d busy; want %d, 0 and 0", streamed.streamed, streamed.spooled, streamed.busy, n)
	}
	if whole.streamed != 0 {
		t.Errorf("store without Stream: %d streamed", whole.streamed)
	}
	if racebuild.Enabled {
		return // the figures are the race detector's
	}
	if whole.spooled == 0 || perReply(streamed)*4 > perReply(whole) {
		t.Errorf("a streamed reply allocated %.0f bytes, more than a quarter of the %.0f of a whole one (%d served)",
			perReply(streamed), perReply(whole), whole.spooled)
	}
	if streamed.peakHeap > 64<<20 {
		t.Errorf("40 streamed readers added %d MiB of heap, want under 64 MiB", streamed.peakHeap>>20)
	}
}

// TestRawReadersStreamedZstd is TestRawReadersStreamed for a capture in a
// .warc.zst segment (the store's own dictionary trained first): its frame
// keeps a 256 KiB window, so it streams too, with that much history
// a reader.
func TestRawReadersStreamedZstd(t *testing.T) {
	if testing.Short() {
		t.Skip("serves 2 × 40 readers of 9 MiB")
	}
	ctx := context.Background()
	st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, DictSamples: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	when := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 40 {
		var page bytes.Buffer
		for j := range 60 {
			fmt.Fprintf(&page, "<li><a href=\"/p/%d/%d\">entry %d of section %x</a></li>\n", i, j, i*j*7919%1009, i*131+j)
		}
		if _, _, err := st.Put(ctx, archive.Capture{URL: fmt.Sprintf("http://big.example/%d", i), Time: when, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: page.Bytes()}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "the store's dictionary", time.Minute, func() bool {
		_, ok := st.OwnDictionary()
		return ok
	})
	const url = "http://big.example/page.html"
	var big bytes.Buffer
	for i := 0; big.Len() < 9<<20; i++ {
		fmt.Fprintf(&big, "<p>row %d: <a href=\"/x/%x\">%d words</a></p>\n", i, i*2654435761, i*7919%104729)
	}
	v, _, err := st.Put(ctx, archive.Capture{URL: url, Time: when, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: big.Bytes()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(v.File, ".warc.zst") {
		t.Fatalf("the capture is in %s, want a .warc.zst segment", v.File)
	}
	const n = 40
	whole := rawReaders(t, st, n, url, when, big.Bytes())
	streamed := rawReaders(t, streamArchive{st}, n, url, when, big.Bytes())
	t.Logf("%d readers of a %d MiB raw capture in a .warc.zst segment: read whole and spooled: heap +%d MiB peak, %d spooled, %d busy; "+
		"streamed: heap +%d MiB peak, %d streamed, %d busy; ratio streamed/whole: heap %.3f",
		n, big.Len()>>20, whole.peakHeap>>20, whole.spooled, whole.busy,
		streamed.peakHeap>>20, streamed.streamed, streamed.busy, float64(streamed.peakHeap)/float64(max(whole.peakHeap, 1)))
	if streamed.streamed != n || streamed.spooled != 0 || streamed.busy != 0 {
		t.Errorf("streaming store: %d streamed, %d spooled, %d busy; want %d, 0 and 0", streamed.streamed, streamed.spooled, streamed.busy, n)
	}
	if !racebuild.Enabled && streamed.peakHeap > 96<<20 {
		t.Errorf("40 streamed readers added %d MiB of heap, want under 96 MiB", streamed.peakHeap>>20)
	}
}
