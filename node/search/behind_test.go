package search

import (
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// TestBehind: indexing is behind from half of the queue until a quarter,
// and never while a backfill or a catch-up runs.
func TestBehind(t *testing.T) {
	sv := &Service{QueueCap: 8}
	take := func() {
		<-sv.q()
		sv.queued.Add(-1) // as Run's flush does
	}
	for i := range 8 {
		if want := i >= 4; sv.Behind() != want {
			t.Fatalf("%d queued: behind %v, want %v", i, !want, want)
		}
		sv.Notify(archive.Version{URL: "http://a.example/", Time: time.Unix(int64(i), 0)})
	}
	if !sv.Behind() {
		t.Fatal("a full queue is not behind")
	}
	sv.backfill.Store(1)
	if sv.Behind() {
		t.Fatal("behind during a backfill")
	}
	sv.backfill.Store(0)
	sv.catching.Store(1)
	if sv.Behind() {
		t.Fatal("behind during a catch-up")
	}
	sv.catching.Store(0)
	if !sv.Behind() {
		t.Fatal("a full queue is not behind after the catch-up")
	}
	for n := 7; n >= 0; n-- {
		take()
		if want := n > 2; sv.Behind() != want {
			t.Fatalf("%d queued on the way down: behind %v, want %v", n, !want, want)
		}
	}
	if got := sv.dropped.Load(); got != 0 {
		t.Fatalf("dropped %d", got)
	}
}

// TestBehindGivesUp: an indexer that stays behind for maxBehindPause
// (a holder stalling every delivery) pauses the crawl no longer, until
// its queue is down to a quarter; then a new backlog pauses it again.
func TestBehindGivesUp(t *testing.T) {
	sv := &Service{QueueCap: 8}
	for i := range 8 {
		sv.Notify(archive.Version{URL: "http://a.example/", Time: time.Unix(int64(i), 0)})
	}
	if !sv.Behind() {
		t.Fatal("a full queue is not behind")
	}
	sv.behindMu.Lock()
	sv.behindSince = time.Now().Add(-maxBehindPause - time.Second)
	sv.behindMu.Unlock()
	if sv.Behind() || sv.Behind() {
		t.Fatal("still behind past maxBehindPause")
	}
	for range 5 { // 3 left: above a quarter
		<-sv.q()
		sv.queued.Add(-1)
	}
	sv.Notify(archive.Version{URL: "http://a.example/", Time: time.Unix(9, 0)})
	if sv.Behind() {
		t.Fatal("behind again before the queue was down to a quarter")
	}
	for range 3 {
		<-sv.q()
		sv.queued.Add(-1)
	}
	if sv.Behind() {
		t.Fatal("behind with a quarter of the queue")
	}
	for i := range 3 {
		sv.Notify(archive.Version{URL: "http://a.example/", Time: time.Unix(int64(10+i), 0)})
	}
	if !sv.Behind() {
		t.Fatal("half of the queue after a drain does not pause the crawl again")
	}
}
