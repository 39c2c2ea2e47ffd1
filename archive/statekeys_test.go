package archive

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
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
