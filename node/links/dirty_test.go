package links

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestDirty: a new set asks for a full sweep; marks are taken once,
// sorted and without repeats; past its bound the set asks for a full
// sweep instead of growing; MarkAll does too.
func TestDirty(t *testing.T) {
	d := NewDirty(3)
	if s, full := d.Take(); !full || s != nil {
		t.Fatalf("new set: %q, full %v; want a full sweep", s, full)
	}
	if s, full := d.Take(); full || len(s) != 0 {
		t.Fatalf("after the full sweep: %q, full %v; want nothing", s, full)
	}
	for _, u := range []string{"http://b/", "http://a/", "http://b/"} {
		d.Mark(u)
	}
	if s, full := d.Take(); full || !slices.Equal(s, []string{"http://a/", "http://b/"}) {
		t.Fatalf("took %q, full %v", s, full)
	}
	if s, _ := d.Take(); len(s) != 0 {
		t.Fatalf("taken twice: %q", s)
	}
	for i := range 4 {
		d.Mark(fmt.Sprintf("http://%d/", i))
	}
	if d.Len() != 0 {
		t.Errorf("overflowed set holds %d", d.Len())
	}
	if s, full := d.Take(); !full || s != nil {
		t.Fatalf("past the bound: %q, full %v; want a full sweep", s, full)
	}
	// Long sources overflow the set before its count does: at most 128
	// bytes a mark on average.
	d.Mark("http://a/")
	d.Mark("http://" + strings.Repeat("x", 3*128) + "/")
	if s, full := d.Take(); !full || s != nil {
		t.Fatalf("past the bytes bound: %q, full %v; want a full sweep", s, full)
	}
	d.Mark("http://a/")
	d.MarkAll()
	if s, full := d.Take(); !full || s != nil {
		t.Fatalf("after MarkAll: %q, full %v", s, full)
	}
}

// TestDirtyConcurrent: marks from many goroutines while sweeps take the
// set are each taken exactly once (or folded into a full sweep).
func TestDirtyConcurrent(t *testing.T) {
	d := NewDirty(1 << 20)
	d.Take()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				d.Mark(fmt.Sprintf("http://%d/%d", g, i))
			}
		}()
	}
	seen := map[string]bool{}
	take := func() {
		s, full := d.Take()
		if full {
			t.Fatal("full sweep without an overflow")
		}
		for _, u := range s {
			if seen[u] {
				t.Fatalf("%s taken twice", u)
			}
			seen[u] = true
		}
	}
	for range 100 {
		take()
	}
	wg.Wait()
	take()
	if len(seen) != 4000 {
		t.Errorf("took %d marks, want 4000", len(seen))
	}
}
