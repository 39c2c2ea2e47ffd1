package archive

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// TestHeads: a walk lists every URL once, in key order, with its newest
// version's time, and a walk cut into pieces (each after the last key
// of the one before, or after a key not in the store) lists the same.
func TestHeads(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	newest := map[string]time.Time{}
	urls := []string{"http://b.test/2", "http://a.test/", "http://b.test/1", "http://a.test/x", "http://c.test/", "urn:x:y"}
	for i, u := range urls {
		for j := range i%3 + 1 { // one to three versions
			when := at.Add(time.Duration(j) * time.Hour)
			mustPut(t, s, capture(u, when, u+when.String()))
			newest[u] = when
		}
	}
	type row struct {
		k   id.ID
		url string
		t   time.Time
	}
	walk := func(after *id.ID, limit int) ([]row, error) {
		var out []row
		stop := errors.New("stop")
		err := s.Heads(ctx, after, func(h Head) error {
			if len(out) == limit {
				return stop
			}
			out = append(out, row{h.Key, string(h.URL), h.Newest})
			return nil
		})
		if errors.Is(err, stop) {
			err = nil
		}
		return out, err
	}
	all, err := walk(nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(urls) {
		t.Fatalf("%d heads, want %d", len(all), len(urls))
	}
	for i, r := range all {
		if r.k != id.OfString(r.url) || !r.t.Equal(newest[r.url]) {
			t.Errorf("head %d: %x %s %v, want key %x, newest %v", i, r.k[:4], r.url, r.t, id.OfString(r.url).String()[:8], newest[r.url])
		}
		if i > 0 && r.k.Cmp(all[i-1].k) <= 0 {
			t.Errorf("head %d out of key order", i)
		}
	}
	var pieces []row
	var after *id.ID
	for range len(urls) + 1 {
		got, err := walk(after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		pieces = append(pieces, got...)
		k := got[len(got)-1].k
		after = &k
	}
	if !slices.Equal(pieces, all) {
		t.Errorf("pieces %v, want %v", pieces, all)
	}
	// A key not in the store, between two that are (the keys are fixed
	// by the URLs): the walk after it starts at the next one.
	missing := all[1].k
	missing[id.Size-1]++
	if missing.Cmp(all[1].k) <= 0 || missing.Cmp(all[2].k) >= 0 {
		t.Fatalf("no key between %v and %v", all[1].k, all[2].k)
	}
	rest, err := walk(&missing, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rest, all[2:]) {
		t.Errorf("after a key not in the store: %v, want %v", rest, all[2:])
	}

	// An entry it cannot decode (the newest of a URL's versions) is
	// skipped and counted; the walk goes on.
	bad := versionKey(all[3].k, all[3].t.Add(time.Hour), id.OfString("x"))
	if err := s.db.Put(bad, []byte{99}, nil); err != nil {
		t.Fatal(err)
	}
	corrupt := s.Stats().Corrupt
	got, err := walk(nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, all) || s.Stats().Corrupt != corrupt+1 {
		t.Errorf("with a bad entry: %v (corrupt %d, was %d), want %v", got, s.Stats().Corrupt, corrupt, all)
	}
}
