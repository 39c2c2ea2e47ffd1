package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

// gatedExporter writes size bytes of records, and when release is set
// waits for it after the first record.
type gatedExporter struct {
	*listingArchive
	size    int
	started chan struct{}
	release chan struct{}
}

func (g *gatedExporter) Export(ctx context.Context, q cdx.Query, w io.Writer, after string) error {
	chunk := []byte(strings.Repeat("r", 4095) + "\n")
	for n := 0; n < g.size; n += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		if n == 0 && g.release != nil {
			g.started <- struct{}{}
			select {
			case <-g.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// askFrom performs a request on s's UI origin from remote.
func askFrom(s *Server, remote, target string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, uiOrigin+target, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestExportLimits: past MaxExports an export is 503 with Retry-After;
// past its ClientSlots a client's /cdx and /export are 503 while other
// clients are served.
func TestExportLimits(t *testing.T) {
	a := sampleArchive(t)
	g := &gatedExporter{listingArchive: &listingArchive{fakeArchive: a}, size: 8 << 10,
		started: make(chan struct{}), release: make(chan struct{})}
	s := newServer(t, g, func(c *Config) { c.Limits.MaxExports = 1; c.Limits.ClientSlots = 1 })
	var wg sync.WaitGroup
	wg.Add(1)
	var first *httptest.ResponseRecorder
	go func() {
		defer wg.Done()
		first = askFrom(s, "192.0.2.1:1000", "/export?host=example.com")
	}()
	<-g.started
	for _, tc := range []struct {
		name, remote, target string
		want                 int
	}{
		{"another client's export, past MaxExports", "192.0.2.2:1000", "/export?host=example.com", 503},
		{"the same client's CDX, past its slots", "192.0.2.1:1001", "/cdx?url=" + page, 503},
		{"another client's CDX", "192.0.2.2:1000", "/cdx?url=" + page, 200},
	} {
		w := askFrom(s, tc.remote, tc.target)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
		if w.Code == 503 && w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", tc.name)
		}
	}
	close(g.release)
	wg.Wait()
	if first.Code != 200 || first.Result().Trailer.Get(TrailerExportStatus) != "complete" {
		t.Errorf("first export: %d, trailer %q", first.Code, first.Result().Trailer.Get(TrailerExportStatus))
	}
	g.release = nil // the first has ended: no more waiting
	if w := askFrom(s, "192.0.2.2:1000", "/export?host=example.com"); w.Code != 200 {
		t.Errorf("export after the first ended: %d", w.Code)
	}
	if got := s.Stats().Busy; got != 2 {
		t.Errorf("busy %d, want 2", got)
	}
}

// TestExportRate: one client's export stream is held to ExportRate
// bytes/s; without the cap the same stream is not.
func TestExportRate(t *testing.T) {
	const size, rate = 640 << 10, 256 << 10
	run := func(r int64) (time.Duration, int) {
		g := &gatedExporter{listingArchive: &listingArchive{fakeArchive: sampleArchive(t)}, size: size}
		s := newServer(t, g, func(c *Config) { c.Limits.ExportRate = r })
		start := time.Now()
		w := askFrom(s, "192.0.2.1:1000", "/export?host=example.com")
		if w.Code != 200 || w.Result().Trailer.Get(TrailerExportStatus) != "complete" {
			t.Fatalf("export: %d %q", w.Code, w.Result().Trailer.Get(TrailerExportStatus))
		}
		return time.Since(start), w.Body.Len()
	}
	capped, n := run(rate)
	// The bucket's burst goes at once, the rest at the rate.
	if min := time.Duration(float64(n-exportBurst(rate)) / rate * float64(time.Second)); capped < min {
		t.Errorf("%d bytes at %d B/s took %v, want at least %v", n, rate, capped, min)
	}
	free, _ := run(-1)
	if free >= capped {
		t.Errorf("uncapped %v, capped %v", free, capped)
	}
	t.Logf("%d bytes: capped at %d B/s %v, uncapped %v", n, rate, capped, free)
}

// storeExporter exports a real store's records (every one), for the
// converters.
type storeExporter struct {
	*fakeArchive
	st *archive.Store
}

func (e storeExporter) Export(ctx context.Context, q cdx.Query, w io.Writer, after string) error {
	return e.ExportProgress(ctx, q, w, after, nil)
}

func (e storeExporter) ExportProgress(ctx context.Context, _ cdx.Query, w io.Writer, after string, progress func(string)) error {
	_, err := e.st.Export(ctx, archive.ExportOptions{After: after, Progress: progress}, w, io.Discard)
	return err
}

// TestWACZRecordCap: a WACZ export past MaxWACZRecords stops with an
// error that says what to do instead; within it, it completes.
func TestWACZRecordCap(t *testing.T) {
	st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, DictSamples: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	when := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range 30 {
		c := archive.Capture{URL: fmt.Sprintf("http://example.com/%d", i), Time: when, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprintf("<title>%d</title>", i))}
		if _, _, err := st.Put(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		max    int
		status string
	}{{5, "error"}, {100, "complete"}} {
		s := newServer(t, storeExporter{fakeArchive: newFake(), st: st}, func(c *Config) { c.Limits.MaxWACZRecords = tc.max })
		w := askFrom(s, "192.0.2.1:1000", "/export?host=example.com&format=wacz")
		tr := w.Result().Trailer
		if tc.status == "error" {
			// Nothing left the buffer yet (the zip writer holds 4 KiB:
			// the warcinfo record and 5 records): a plain 400 that says
			// what to do instead (else the trailers would).
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "format=warc") {
				t.Errorf("max %d: %d %q, want 400 saying format=warc", tc.max, w.Code, w.Body.String())
			}
			continue
		}
		if w.Code != 200 || tr.Get(TrailerExportStatus) != tc.status {
			t.Errorf("max %d: %d, status %q (%s)", tc.max, w.Code, tr.Get(TrailerExportStatus), tr.Get(TrailerExportError))
		}
	}
}
