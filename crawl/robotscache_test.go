package crawl

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedRobots answers with rec or err, counting calls; when gate is
// set, each call first waits for it (or for ctx).
type scriptedRobots struct {
	rec   RobotsRecord
	err   error
	gate  chan struct{}
	calls atomic.Int64
}

func (s *scriptedRobots) Robots(ctx context.Context, _ string) (RobotsRecord, error) {
	s.calls.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return RobotsRecord{}, ctx.Err()
		}
	}
	return s.rec, s.err
}

func TestRobotsCacheTTL(t *testing.T) {
	clock := newClock()
	tests := []struct {
		name      string
		rec       RobotsRecord
		err       error
		refetchAt time.Duration // first age at which the cache asks again
		allowed   bool
	}{
		{name: "200 kept a day", rec: RobotsRecord{Status: 200, Body: []byte("User-agent: *\nDisallow: /x")}, refetchAt: 24 * time.Hour, allowed: true},
		{name: "404 kept a day", rec: RobotsRecord{Status: 404}, refetchAt: 24 * time.Hour, allowed: true},
		{name: "503 retried after an hour", rec: RobotsRecord{Status: 503}, refetchAt: time.Hour},
		{name: "unreachable retried after an hour", rec: RobotsRecord{Status: 0}, refetchAt: time.Hour},
		{name: "source error retried after an hour", err: errors.New("owner down"), refetchAt: time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec
			rec.Fetched = clock.Now()
			src := &scriptedRobots{rec: rec, err: tc.err}
			c := newRobotsCache(src, "herod", 24*time.Hour, clock.Now)
			start := clock.Now()
			ctx := context.Background()
			e, err := c.get(ctx, "http://h")
			if err != nil {
				t.Fatal(err)
			}
			if got := e.rules.Allowed("/y"); got != tc.allowed {
				t.Fatalf("allowed %v", got)
			}
			clock.Add(tc.refetchAt - time.Second)
			c.get(ctx, "http://h")
			if n := src.calls.Load(); n != 1 {
				t.Fatalf("%d fetches before the TTL", n)
			}
			clock.Add(time.Second)
			c.get(ctx, "http://h")
			if n := src.calls.Load(); n != 2 {
				t.Fatalf("%d fetches at the TTL (%v after the first)", n, clock.Now().Sub(start))
			}
		})
	}
}

func TestRobotsCacheCancelledAsker(t *testing.T) {
	src := &scriptedRobots{rec: RobotsRecord{Status: 200, Body: []byte("User-agent: *\nDisallow: /x")}, gate: make(chan struct{})}
	c := newRobotsCache(src, "herod", 24*time.Hour, time.Now)
	first, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.get(first, "http://h")
		done <- err
	}()
	for src.calls.Load() == 0 { // the first asker is fetching
		time.Sleep(time.Millisecond)
	}
	second := make(chan *robotsEntry, 1)
	go func() {
		e, err := c.get(context.Background(), "http://h")
		if err != nil {
			t.Error(err)
		}
		second <- e
	}()
	cancel()
	<-done
	close(src.gate) // the second asker's own fetch goes through
	e := <-second
	if e.err != nil || !e.rules.Allowed("/y") || e.rules.Allowed("/x") {
		t.Fatalf("second asker got the first one's cancellation: err %v", e.err)
	}
}

// TestRobotsCacheBounded: however many origins are asked about, the cache
// holds at most maxRobotsEntries of them and about maxRobotsBytes of
// their files; expired entries go first, and a fresh entry is served from
// the cache while the bounds hold.
func TestRobotsCacheBounded(t *testing.T) {
	ctx := context.Background()
	clock := newClock()
	body := make([]byte, 256<<10)
	copy(body, "User-agent: *\nDisallow: /private\n")
	src := &scriptedRobots{rec: RobotsRecord{Status: 200, Body: body}}
	c := newRobotsCache(src, "herod", 24*time.Hour, clock.Now)
	big := maxRobotsBytes/(len(body)+robotsEntryCost) + 50
	for i := range big {
		src.rec.Fetched = clock.Now()
		if _, err := c.get(ctx, fmt.Sprintf("http://big%d.example", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n, b := len(c.entries), c.bytes
	c.mu.Unlock()
	if b > maxRobotsBytes+int64(len(body)+robotsEntryCost) || n >= big {
		t.Fatalf("%d origins of 256 KiB asked: %d held, %d bytes (bound %d)", big, n, b, maxRobotsBytes)
	}
	// Small files: the count bounds them; expired ones go first.
	src.rec.Body = []byte("User-agent: *\nAllow: /")
	clock.Add(25 * time.Hour) // every entry above has expired
	for i := range maxRobotsEntries + 100 {
		src.rec.Fetched = clock.Now()
		if _, err := c.get(ctx, fmt.Sprintf("http://o%d.example", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n, b = len(c.entries), c.bytes
	_, stale := c.entries["http://big0.example"]
	c.mu.Unlock()
	if n > maxRobotsEntries || stale {
		t.Fatalf("%d origins held (bound %d), an expired one kept: %v", n, maxRobotsEntries, stale)
	}
	if b > int64(n)*int64(robotsEntryCost+len(src.rec.Body)) {
		t.Fatalf("%d bytes counted for %d small entries", b, n)
	}
	calls := src.calls.Load()
	last := fmt.Sprintf("http://o%d.example", maxRobotsEntries+99)
	if _, err := c.get(ctx, last); err != nil || src.calls.Load() != calls {
		t.Fatalf("a fresh entry asked again (%v)", err)
	}
}
