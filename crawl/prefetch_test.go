package crawl

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// statesCounter is an archive.Store that counts its crawl state reads:
// one at a time (State) and by batch (States).
type statesCounter struct {
	*archive.Store
	single, batches, batched atomic.Int64
}

func (s *statesCounter) State(ctx context.Context, url string) (archive.CrawlState, error) {
	s.single.Add(1)
	return s.Store.State(ctx, url)
}

func (s *statesCounter) States(ctx context.Context, urls []string) ([]archive.CrawlState, []error, error) {
	s.batches.Add(1)
	s.batched.Add(int64(len(urls)))
	return s.Store.States(ctx, urls)
}

// TestStatesReadByBatch: on a revisit day a host's loop reads the crawl
// states of its batch at once (StatesReader), and every fetch is still
// conditional on its own state: each unchanged page is a 304, the
// changed one a new version.
func TestStatesReadByBatch(t *testing.T) {
	pages := map[string]string{}
	var paths []string
	for i := range 40 {
		p := fmt.Sprintf("/p%02d", i)
		pages[p] = "<p>" + p + "</p>"
		paths = append(paths, p)
	}
	pages["/"] = links(nil, paths...)
	s := newSite(t, pages)
	a := &statesCounter{Store: storeKind.open(t).(*archive.Store)}
	clock := newClock()
	c, _ := startCrawler(t, t.TempDir(), testConfig(clock), a)
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	s.set("/p07", "<p>changed</p>")
	batches := a.batches.Load()
	clock.Add(24 * time.Hour)
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if st := c.Stats(); st.NotModified != 40 || st.NewVersions != 1 || st.FetchedToday != 41 {
		t.Fatalf("day 2 stats %+v", st)
	}
	if a.batches.Load() == batches {
		t.Fatal("the revisit read no batch of states")
	}
	for _, p := range append(paths, "/") {
		rs := s.requests(p)
		if len(rs) != 2 || rs[1].ifNoneMatch == "" {
			t.Fatalf("%s: day 2 request not conditional: %+v", p, rs)
		}
	}
	t.Logf("states read by batch %d (%d batches), one at a time %d", a.batched.Load(), a.batches.Load(), a.single.Load())
}

// TestPreStateFresh: a state read with its batch stands in for the
// archive's only while it is fresh; an older one is read again.
func TestPreStateFresh(t *testing.T) {
	a := storeKind.open(t).(*archive.Store)
	c, _ := startCrawler(t, t.TempDir(), testConfig(newClock()), a)
	ctx := context.Background()
	u := "http://example.test/a"
	if err := a.SetState(ctx, u, archive.CrawlState{ETag: `"stored"`, Status: 200}); err != nil {
		t.Fatal(err)
	}
	pre := archive.CrawlState{ETag: `"batch"`, Status: 200}
	for _, tc := range []struct {
		name string
		pre  *preState
		want string
	}{
		{"none", nil, `"stored"`},
		{"fresh", &preState{st: pre, at: time.Now()}, `"batch"`},
		{"stale", &preState{st: pre, at: time.Now().Add(-2 * preStateAge)}, `"stored"`},
	} {
		st, err := c.state(ctx, u, tc.pre)
		if err != nil || st.ETag != tc.want {
			t.Errorf("%s: ETag %s, %v; want %s", tc.name, st.ETag, err, tc.want)
		}
	}
	// A fresh "none" still falls back to the state of a stored version.
	v := "http://example.test/v"
	if _, _, err := a.Put(ctx, archive.Capture{URL: v, Time: time.Now(), Status: 200,
		Header: map[string][]string{"Etag": {`"v1"`}, "Content-Type": {"text/html"}}, Body: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	st, err := c.state(ctx, v, &preState{err: archive.ErrNotFound, at: time.Now()})
	if err != nil || st.ETag != `"v1"` {
		t.Errorf("fresh none with a version: %+v, %v", st, err)
	}
}
