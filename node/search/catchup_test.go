package search

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	fts "github.com/herod-archive/herod/search"
)

// laterLister lists nothing the first time (a backfill that ran before
// the versions were stored), then the archive.
type laterLister struct {
	arc   *archive.Store
	calls atomic.Int32
}

func (l *laterLister) URLs(ctx context.Context, q archive.Query, fn func(string) error) error {
	if l.calls.Add(1) == 1 {
		return nil
	}
	return l.arc.URLs(ctx, q, fn)
}

// TestCatchUpDropped: versions the full queue dropped are indexed by a
// catch-up once the queue is empty, without a restart's backfill.
func TestCatchUpDropped(t *testing.T) {
	const n, capacity = 50, 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	arc := openArchive(t)
	w := &world{}
	sn := syncRing(t, w, p2ptest.Hosts(t, 1), 1)[0]
	w.add(sn.v)
	sv := sn.sv
	sv.QueueCap = capacity
	for i := range n {
		v, _, err := arc.Put(ctx, archive.Capture{URL: fmt.Sprintf("http://late.example/%d", i), Time: time.Now(), Status: 200,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: fmt.Appendf(nil, "latecomer word%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		sv.Notify(v)
	}
	if got := sv.Stats().Dropped; got != n-capacity {
		t.Fatalf("dropped %d, want %d", got, n-capacity)
	}
	if sv.Idle() {
		t.Error("Idle with versions queued and dropped")
	}
	ix := &fts.Indexer{Archive: arc, Sink: sv, Docs: sv.Store}
	go sv.Run(ctx, ix, &laterLister{arc: arc}, func(id.ID) bool { return true })
	testwait.For(t, "every version indexed", 30*time.Second, func() error {
		l, err := sv.Store.Postings(ctx, fts.PostingQuery{Term: "latecom", At: time.Now().UnixMilli()})
		if err != nil {
			return err
		}
		if l.DF != n {
			return fmt.Errorf("%d of %d versions hold the word", l.DF, n)
		}
		return nil
	})
	testwait.For(t, "the service idle once all is indexed", 30*time.Second, func() error {
		if !sv.Idle() {
			return fmt.Errorf("not idle: %+v", sv.Stats())
		}
		return nil
	})
	if st := sv.Stats(); st.CatchUps < 1 {
		t.Errorf("catch-ups %d, want at least 1", st.CatchUps)
	}
}
