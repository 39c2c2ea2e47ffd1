package links

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// TestMarks: a cursor over the read marks answers keys asked in
// increasing order with the time saved for their source, nothing for a
// source never saved or forgotten, and a cursor after a key skips the
// marks up to it.
func TestMarks(t *testing.T) {
	x, err := Open(t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ix := &Indexer{Index: x}
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	saved := map[id.ID]time.Time{}
	var keys []id.ID
	for i := range 40 {
		src := fmt.Sprintf("http://h.test/%d", i)
		k := id.OfString(src)
		keys = append(keys, k)
		if i%3 == 0 {
			continue // never read
		}
		last := at.Add(time.Duration(i) * time.Hour)
		if err := ix.save(src, &sourceState{Last: last}); err != nil {
			t.Fatal(err)
		}
		saved[k] = last
	}
	forgotten := "http://h.test/4"
	if err := ix.Forget(forgotten); err != nil {
		t.Fatal(err)
	}
	delete(saved, id.OfString(forgotten))
	slices.SortFunc(keys, id.ID.Cmp)
	check := func(after *id.ID, ks []id.ID) {
		t.Helper()
		m := ix.Marks(after)
		for _, k := range ks {
			got, ok := m.Read(k)
			want, have := saved[k]
			if ok != have || !got.Equal(want) {
				t.Errorf("key %s: %v %v, want %v %v", k.Short(), got, ok, want, have)
			}
		}
		if err := m.Release(); err != nil {
			t.Fatal(err)
		}
	}
	check(nil, keys)
	check(nil, keys[10:]) // keys skipped over
	m := ix.Marks(&keys[19])
	for _, k := range keys[:20] { // at or before after: not in the cursor
		if _, ok := m.Read(k); ok {
			t.Errorf("key %s at or before the cursor's start was answered", k.Short())
		}
	}
	if err := m.Release(); err != nil {
		t.Fatal(err)
	}
	check(&keys[19], keys[20:])
	if err := x.DropReadMarks(); err != nil {
		t.Fatal(err)
	}
	saved = nil
	check(nil, keys)
}
