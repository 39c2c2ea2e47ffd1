package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
)

func TestLifecycleErrors(t *testing.T) {
	ctx := context.Background()
	c, err := New(t.TempDir(), Config{}, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Idle() {
		t.Fatal("new crawler not idle")
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Add(cancelled, []string{"http://example.org/"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Add with cancelled ctx: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.Add(ctx, []string{"http://example.org/"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := c.Start(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

// TestNewChecksDeps refuses Deps a crawler cannot work with, by name.
func TestNewChecksDeps(t *testing.T) {
	a, f := newMemArchive(), &loopForwarder{}
	tests := []struct {
		name string
		d    Deps
		ok   bool
	}{
		{"none", Deps{}, false},
		{"no forwarder", Deps{Archive: a}, false},
		{"no archive", Deps{Forwarder: f}, false},
		{"the required ones", Deps{Archive: a, Forwarder: f}, true},
		{"a sharer without a haver", Deps{Archive: a, Forwarder: f, Sharer: sharer{}}, false},
		{"a haver without a sharer", Deps{Archive: a, Forwarder: f, Haver: haver{}}, true},
		{"a haver and a sharer", Deps{Archive: a, Forwarder: f, Haver: haver{}, Sharer: sharer{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(t.TempDir(), Config{}, tt.d)
			if (err == nil) != tt.ok {
				t.Fatalf("New: %v, want ok %v", err, tt.ok)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

type haver struct{}

func (haver) HasVersions(urls []string) ([]bool, error) { return make([]bool, len(urls)), nil }

type sharer struct{}

func (sharer) ShareKnown(context.Context, []string) error { return nil }

func TestAddBeforeStartAndDayOnStart(t *testing.T) {
	s := newSite(t, map[string]string{"/": "<p>root</p>"})
	clock := newClock()
	dir := t.TempDir()
	a := newMemArchive()
	f := &loopForwarder{}
	c, err := New(dir, testConfig(clock), depsOf(a, f))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Add(context.Background(), []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Queued != 1 || c.Idle() {
		t.Fatalf("before Start: %+v", st)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if st := c.Stats(); st.Day != c.Day(clock.Now()) || st.NewVersions != 1 {
		t.Fatalf("after Start: %+v", st)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The node was down across two day boundaries: Start begins a new day
	// and fetches the known URL again.
	clock.Add(48 * time.Hour)
	c2, _ := startCrawler(t, dir, testConfig(clock), a)
	waitIdle(t, c2)
	if st := c2.Stats(); st.Day != c2.Day(clock.Now()) || st.NotModified != 1 {
		t.Fatalf("after restart on a later day: %+v", st)
	}
}

func TestInterruptedNewDayIsFinished(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	c, err := New(dir, testConfig(clock), depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for i := range 20 {
		urls = append(urls, "http://127.0.0.1:1/p"+strconv.Itoa(i))
	}
	if err := c.Add(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash inside newDay: the marker is written, the pending
	// entries are gone, nothing is queued again yet.
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := c.Day(clock.Now()) + 1
	if err := db.Put(keyNewDay, u64(uint64(target)), nil); err != nil {
		t.Fatal(err)
	}
	it := db.NewIterator(nil, nil)
	for it.Next() {
		if strings.HasPrefix(string(it.Key()), prefixQueue) {
			if err := db.Delete(it.Key(), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	it.Release()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(clock)
	robots := blockingRobots{entered: make(chan struct{}, 1)}
	cfg.Robots = robots // hold the host loop so the queue can be inspected
	c2, err := New(dir, cfg, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	// Not started: stats show the damage; Start repairs it.
	if st := c2.Stats(); st.Queued != 0 {
		t.Fatalf("queued %d before repair", st.Queued)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := c2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c2.Stats(); st.Day != target || st.Queued != 20 {
		t.Fatalf("after repair: %+v", st)
	}
	// Shutting down while robots.txt is being fetched loses nothing.
	<-robots.entered
	cancel()
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	c3, err := New(dir, cfg, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if st := c3.Stats(); st.Queued != 20 || len(st.ErrorsByKind) != 0 {
		t.Fatalf("after shutdown during robots.txt: %+v", st)
	}
}

// blockingRobots never answers before ctx ends.
type blockingRobots struct{ entered chan struct{} }

func (b blockingRobots) Robots(ctx context.Context, _ string) (RobotsRecord, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return RobotsRecord{}, ctx.Err()
}

func TestHTTPRobotsRedirects(t *testing.T) {
	tests := []struct {
		name    string
		hops    int
		status  int
		allowed bool
	}{
		{"direct", 0, 200, false},
		{"five redirects followed", 5, 200, false},
		{"six redirects: unavailable", 6, 404, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n, _ := strconv.Atoi(r.URL.Query().Get("n"))
				if r.URL.Path == "/robots.txt" && tc.hops > 0 {
					http.Redirect(w, r, "/r?n=1", http.StatusFound)
					return
				}
				if r.URL.Path == "/r" && n < tc.hops {
					http.Redirect(w, r, "/r?n="+strconv.Itoa(n+1), http.StatusFound)
					return
				}
				w.Write([]byte("User-agent: *\nDisallow: /\n"))
			}))
			defer srv.Close()
			h := &HTTPRobots{Client: NewClient(1, time.Second, loopback...)}
			rec, err := h.Robots(context.Background(), srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != tc.status {
				t.Fatalf("status %d, want %d", rec.Status, tc.status)
			}
			if got := ParseRobots(rec, "herod").Allowed("/x"); got != tc.allowed {
				t.Fatalf("allowed %v, want %v", got, tc.allowed)
			}
		})
	}
	h := &HTTPRobots{Client: NewClient(1, time.Second, loopback...)}
	rec, err := h.Robots(context.Background(), "http://127.0.0.1:1")
	if err != nil || rec.Status != 0 || ParseRobots(rec, "herod").Allowed("/") {
		t.Fatalf("unreachable host: %+v, %v", rec, err)
	}
}

// TestOnKnown: the hook sees each URL once, when an Add makes it known,
// and not the URLs remembered for other nodes.
func TestOnKnown(t *testing.T) {
	ctx := context.Background()
	c, err := New(t.TempDir(), testConfig(newClock()), depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	c.OnKnown(func(urls []string) { got = append(got, urls...) })
	if err := c.Add(ctx, []string{"http://a.example/1", "http://a.example/2", "http://a.example/1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Remember(ctx, []string{"http://a.example/3"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(ctx, []string{"http://a.example/2", "http://a.example/3", "http://a.example/4"}); err != nil {
		t.Fatal(err)
	}
	// /3 was remembered, so known already; queuing it does not report it.
	want := []string{"http://a.example/1", "http://a.example/2", "http://a.example/4"}
	if !slices.Equal(got, want) {
		t.Fatalf("OnKnown saw %q, want %q", got, want)
	}
	c.OnKnown(nil)
	if err := c.Add(ctx, []string{"http://a.example/5"}); err != nil || len(got) != 3 {
		t.Fatalf("OnKnown(nil) still calls: %q, %v", got, err)
	}
}

// partialSharer fails every other URL of a share, naming them as
// forward.ShareError does, or fails all without naming any.
type partialSharer struct {
	mu     sync.Mutex
	shared []string
	named  bool
}

func (p *partialSharer) ShareKnown(_ context.Context, urls []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.named {
		return errors.New("ring not ready")
	}
	var missed failedURLs
	for i, u := range urls {
		if i%2 == 0 {
			p.shared = append(p.shared, u)
		} else {
			missed = append(missed, u)
		}
	}
	return fmt.Errorf("share: %w", missed)
}

type failedURLs []string

func (f failedURLs) Error() string        { return fmt.Sprintf("%d URLs missed a holder", len(f)) }
func (f failedURLs) FailedURLs() []string { return f }

// TestDailyShareMissesGoToOnKnown: the URLs the day's share of known URLs
// did not deliver, when its error names them, go to the OnKnown
// function (whose shares are tried again within minutes); an error that
// names none sends nothing there.
func TestDailyShareMissesGoToOnKnown(t *testing.T) {
	ctx := context.Background()
	for _, named := range []bool{true, false} {
		sh := &partialSharer{named: named}
		c, err := New(t.TempDir(), testConfig(newClock()), Deps{Archive: newMemArchive(), Forwarder: &loopForwarder{}, Haver: haver{}, Sharer: sh})
		if err != nil {
			t.Fatal(err)
		}
		urls := []string{"http://a.example/1", "http://a.example/2", "http://a.example/3", "http://a.example/4"}
		if err := c.Add(ctx, urls); err != nil {
			t.Fatal(err)
		}
		var got []string
		c.OnKnown(func(u []string) { got = append(got, u...) })
		if err := c.NewDay(ctx); err != nil {
			t.Fatal(err)
		}
		c.Close()
		sh.mu.Lock()
		shared := sh.shared
		sh.mu.Unlock()
		if !named {
			if len(got) != 0 {
				t.Errorf("an error naming no URL sent %q to OnKnown", got)
			}
			continue
		}
		all := append(slices.Clone(shared), got...)
		slices.Sort(all)
		if len(shared) == 0 || len(got) == 0 || !slices.Equal(all, urls) {
			t.Errorf("shared %q, OnKnown got %q: want the missed half", shared, got)
		}
	}
}
