package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// TestMoveStates: crawl states an older index keeps under their URL's
// hash are moved to their keys in host order at open (binary and JSON
// forms; an unreadable one dropped), and a rebuild from the segments
// moves those of an index no open has moved.
func TestMoveStates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	must(t, err)
	u1, u2, u3, u4 := "http://a.example/one", "http://b.example/two", "http://a.example/bad", "http://c.example/four"
	mustPut(t, s, capture(u1, t0, "one"))
	bin, err := encodeState(u1, CrawlState{ETag: `"one"`, Status: 200, Checked: t0}, true)
	must(t, err)
	js, err := json.Marshal(stateRecord{URL: u2, State: CrawlState{ETag: `"two"`, Status: 200, Checked: t0}})
	must(t, err)
	must(t, s.db.Delete(crawlStateKey(u1), nil))
	must(t, s.db.Put(stateKey(id.OfString(u1)), bin, nil))
	must(t, s.db.Put(stateKey(id.OfString(u2)), js, nil))
	must(t, s.db.Put(stateKey(id.OfString(u3)), []byte{stateBinary}, nil))
	if _, err := s.State(ctx, u1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before the move: %v, want ErrNotFound (the state is under its old key)", err)
	}
	must(t, s.Close())

	check := func(when string, s *Store, want map[string]string) {
		t.Helper()
		for u, etag := range want {
			st, err := s.State(ctx, u)
			if err != nil || st.ETag != etag {
				t.Errorf("%s: state of %s: %+v, %v; want ETag %s", when, u, st, err, etag)
			}
		}
		if _, err := s.State(ctx, u3); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: the unreadable state: %v, want ErrNotFound (dropped)", when, err)
		}
		it := s.db.NewIterator(util.BytesPrefix([]byte{pState}), nil)
		defer it.Release()
		if it.Next() {
			t.Errorf("%s: a state under its old key is left: %q", when, it.Key())
		}
	}
	s, err = Open(dir, Options{NoSync: true})
	must(t, err)
	check("reopened", s, map[string]string{u1: `"one"`, u2: `"two"`})
	if st, _ := s.State(ctx, u1); st.Versioned == 0 {
		t.Error("the moved state lost its proof of a version")
	}
	must(t, s.Close())

	// An index written before the move, rebuilt before any open.
	db, err := leveldb.OpenFile(filepath.Join(dir, "index"), nil)
	must(t, err)
	js4, err := json.Marshal(stateRecord{URL: u4, State: CrawlState{ETag: `"four"`, Status: 404, Checked: t0}})
	must(t, err)
	must(t, db.Put(stateKey(id.OfString(u4)), js4, nil))
	must(t, db.Close())
	if _, err := Reindex(ctx, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{NoSync: true})
	must(t, err)
	defer s.Close()
	check("rebuilt", s, map[string]string{u1: `"one"`, u2: `"two"`, u4: `"four"`})
}

// BenchmarkMoveStates times the first open of an index written before
// crawl states were keyed in host order: moveStates over n states of
// the store's shape (a page's state with 20 outlinks), the index's
// options, synced batches.
//
//	go test ./archive -run '^$' -bench MoveStates -benchtime 1x -timeout 0
func BenchmarkMoveStates(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("states=%d", n), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				db, err := leveldb.OpenFile(b.TempDir(), indexOptions(opt.Options{}))
				if err != nil {
					b.Fatal(err)
				}
				var batch leveldb.Batch
				for i := range n {
					u := shapeURL(i)
					st := CrawlState{ETag: fmt.Sprintf(`"%x"`, i), LastModified: "Mon, 02 Jan 2026 15:04:05 GMT",
						Status: 200, Digest: id.OfString(u), Checked: t0}
					for j := range 20 {
						st.Outlinks = append(st.Outlinks, shapeURL((i+j*7919)%n))
					}
					val, err := encodeState(u, st, true)
					if err != nil {
						b.Fatal(err)
					}
					batch.Put(stateKey(id.OfString(u)), val)
					if batch.Len() == 1000 || i == n-1 {
						if err := db.Write(&batch, nil); err != nil {
							b.Fatal(err)
						}
						batch.Reset()
					}
				}
				b.StartTimer()
				start, cpu0 := time.Now(), cpuTime()
				if err := moveStates(db, slog.New(slog.DiscardHandler)); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s")
				b.ReportMetric(1000*(cpuTime()-cpu0).Seconds()/float64(n), "cpu-s/1000states")
				b.StopTimer()
				db.Close()
			}
		})
	}
}
