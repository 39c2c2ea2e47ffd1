package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// A page deleted at its site (a 404 from the second day on) is recorded:
// the archive holds its page for the first day and the 404 from the
// second, and a later unchanged 404 adds nothing.
func TestDeletedPageRecorded(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, map[string]string{"/": "<p>here today</p>"})
	a := storeKind.open(t).(*archive.Store)
	clock := newClock()
	c, _ := startCrawler(t, t.TempDir(), testConfig(clock), a)
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	day1 := clock.Now()

	s.setPage("/", page{status: http.StatusNotFound, ctype: "text/html", body: "<p>here today</p>"}) // the same body: only the status says it is gone
	for range 2 {
		clock.Add(24 * time.Hour)
		if err := c.NewDay(ctx); err != nil {
			t.Fatal(err)
		}
		waitIdle(t, c)
	}
	vs, err := a.Versions(ctx, s.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Status != 200 || vs[1].Status != 404 {
		t.Fatalf("versions %+v, want a 200 then one 404", vs)
	}
	if v, err := a.At(ctx, s.url("/"), day1); err != nil || v.Status != 200 {
		t.Fatalf("at day 1: %+v, %v; want the page", v, err)
	}
	if v, err := a.At(ctx, s.url("/"), clock.Now()); err != nil || v.Status != 404 {
		t.Fatalf("at day 3: %+v, %v; want the 404", v, err)
	}
	if n := len(s.requests("/")); n != 3 {
		t.Fatalf("/ requested %d times in 3 days", n)
	}
}

// A node that becomes the owner of a range holds the range's versions as a
// replica but never crawled them: its next day fetches every stored URL it
// owns exactly once, conditionally with the stored validators, and fetches
// none it does not own.
func TestNewDayQueuesStoredURLs(t *testing.T) {
	ctx := context.Background()
	pages := map[string]string{}
	var paths []string
	for _, p := range []string{"/a", "/b", "/c", "/d", "/gone", "/other"} {
		pages[p] = "<p>" + p + "</p>"
		paths = append(paths, p)
	}
	s := newSite(t, pages)
	s.setPage("/gone", page{status: http.StatusNotFound, ctype: "text/html", body: "no such page"})

	// The archive as a replica received it: the former owner's versions
	// (crawled by another crawler, whose queue this node never sees).
	a := storeKind.open(t).(*archive.Store)
	clock := newClock()
	donor, _ := startCrawler(t, t.TempDir(), testConfig(clock), a)
	var urls []string
	for _, p := range paths {
		urls = append(urls, s.url(p))
	}
	if err := donor.Add(ctx, urls); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, donor)
	if err := donor.Close(); err != nil {
		t.Fatal(err)
	}
	// The donor's crawl states are the former owner's, not the replica's.
	for _, u := range urls {
		if err := a.SetState(ctx, u, archive.CrawlState{}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.StateFromVersion(ctx, s.url("/a"))
	if err != nil || st.ETag == "" || st.Status != 200 {
		t.Fatalf("state from version: %+v, %v", st, err)
	}
	cfg := testConfig(clock)
	cfg.Owns = func(u string) bool { return u != s.url("/other") }
	owner, _ := startCrawler(t, t.TempDir(), cfg, stateless{a})
	waitIdle(t, owner) // its first start may fetch them today already
	before := len(s.requests(""))
	clock.Add(24 * time.Hour)
	if err := owner.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, owner)
	got := map[string]int{}
	for _, r := range s.requests("")[before:] {
		if r.path == "/robots.txt" {
			continue
		}
		got[r.path]++
		if r.path != "/gone" && r.ifNoneMatch == "" {
			t.Errorf("%s fetched without the stored validator", r.path)
		}
	}
	want := map[string]int{"/a": 1, "/b": 1, "/c": 1, "/d": 1, "/gone": 1}
	if len(got) != len(want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	for p, n := range want {
		if got[p] != n {
			t.Fatalf("requests %v, want %v", got, want)
		}
	}
	if st := owner.Stats(); st.NewVersions != 0 || st.NotModified != 4 || st.Unchanged != 1 || st.KnownURLs != 5 {
		t.Fatalf("stats %+v: want 4 not modified, the 404 unchanged, nothing stored, 5 URLs known", st)
	}
	vs, err := a.Versions(ctx, s.url("/gone"))
	if err != nil || len(vs) != 1 {
		t.Fatalf("/gone: %d versions, %v", len(vs), err)
	}
	known := slices.Collect(func(yield func(string) bool) {
		for p := range got {
			yield(p)
		}
	})
	slices.Sort(known)
	t.Logf("taken over and fetched once each: %v", known)
}

// stateless is the archive of a replica: the versions, no crawl states of
// their own (the replica never crawled them).
type stateless struct{ *archive.Store }

func (stateless) State(context.Context, string) (archive.CrawlState, error) {
	return archive.CrawlState{}, archive.ErrNotFound
}

// A take-over under way when the crawler closes (a node shutting down
// while it takes over a range) ends, with ErrClosed at its next batch,
// before the queue's database closes: it used to read a closed database's
// snapshot and crash the process.
func TestCloseWaitsForTakeOver(t *testing.T) {
	ctx := context.Background()
	s := newSite(t, map[string]string{"/": "<p>home</p>"})
	c, _ := startCrawler(t, t.TempDir(), testConfig(newClock()), newMemArchive())
	var urls []string
	for i := range 2000 { // a queue database of several blocks
		urls = append(urls, s.url(fmt.Sprintf("/p%d", i)))
	}
	if err := c.Add(ctx, urls); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	closing := make(chan struct{})
	c.closing = func() { close(closing) }
	closed := make(chan error, 1)
	first := true
	n, err := c.TakeOver(ctx, func(string) bool {
		if first { // close the crawler in the middle of the walk
			first = false
			go func() { closed <- c.Close() }()
			<-closing
			// Close must now wait for this walk; give it time to close
			// the database if it does not.
			select {
			case err := <-closed:
				t.Errorf("Close returned (%v) while a take-over was reading the queue", err)
				closed <- err
			case <-time.After(200 * time.Millisecond):
			}
		}
		return true
	})
	if err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("take-over while closing: %d queued, %v; want nil or ErrClosed", n, err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := c.TakeOver(ctx, func(string) bool { return true }); !errors.Is(err, ErrClosed) {
		t.Fatalf("take-over after close: %v, want ErrClosed", err)
	}
}
