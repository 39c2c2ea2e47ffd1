package crawl

import (
	"context"
	"errors"
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
