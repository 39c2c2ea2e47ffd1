package sortedread

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// TestReadMatchesGets reads random batches — neighbours, gaps wider
// than Steps, repeats, keys missing, keys past the last entry — and
// checks each against a point read.
func TestReadMatchesGets(t *testing.T) {
	db, err := leveldb.Open(storage.NewMemStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(n int) []byte { return fmt.Appendf(nil, "k%06d", n) }
	for n := 0; n < 3000; n += 1 + n%3 { // holes between entries
		if err := db.Put(key(n), fmt.Appendf(nil, "v%d", n), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put([]byte("z"), []byte("outside"), nil); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var keys [][]byte
		start := rng.IntN(3100)
		for range rng.IntN(64) {
			switch rng.IntN(4) {
			case 0: // far away
				keys = append(keys, key(rng.IntN(3200)))
			case 1: // a repeat
				if len(keys) > 0 {
					keys = append(keys, keys[rng.IntN(len(keys))])
				}
			default: // a neighbour
				start += rng.IntN(4)
				keys = append(keys, key(start))
			}
		}
		got := make([]string, len(keys))
		it := db.NewIterator(util.BytesPrefix([]byte("k")), nil)
		err := Read(it, keys, func(i int, v []byte) error {
			if got[i] != "" {
				return fmt.Errorf("key %s found twice", keys[i])
			}
			got[i] = string(v)
			return nil
		})
		it.Release()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, k := range keys {
			want, err := db.Get(k, nil)
			if errors.Is(err, leveldb.ErrNotFound) {
				want = nil
			} else if err != nil {
				t.Fatal(err)
			}
			if got[i] != string(want) {
				t.Fatalf("round %d: key %s: read %q, point read %q", round, k, got[i], want)
			}
		}
	}
}

// TestReadStopsAtError returns found's error and calls it no more.
func TestReadStopsAtError(t *testing.T) {
	db, err := leveldb.Open(storage.NewMemStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Put([]byte(k), []byte(k), nil); err != nil {
			t.Fatal(err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	it := db.NewIterator(nil, nil)
	defer it.Release()
	err = Read(it, [][]byte{[]byte("c"), []byte("a"), []byte("b")}, func(i int, v []byte) error {
		calls++
		if string(v) != "a" {
			t.Errorf("first call for %q, want a (key order)", v)
		}
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Read = %v after %d calls, want stop after 1", err, calls)
	}
}
