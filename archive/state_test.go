package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// TestStateBinaryRoundTrip: the binary form keeps every field, including
// a zero Checked, no outlinks, and outlinks that share nothing, all or
// part of their bytes with the one before.
func TestStateBinaryRoundTrip(t *testing.T) {
	states := []CrawlState{
		{},
		{Status: 404, Digest: id.Sum([]byte("gone")), Checked: time.Date(2026, 11, 28, 19, 0, 0, 123456789, time.UTC)},
		{ETag: `W/"é"`, LastModified: "Fri, 20 Nov 2026 10:00:00 GMT", Status: 200, Digest: id.Sum([]byte("x")),
			Outlinks: []string{"", "http://a.example/", "http://a.example/b", "http://a.example/b/c", "https://z.example/"},
			Checked:  time.Unix(-5, 7).UTC()},
	}
	for i, st := range states {
		rec := stateRecord{URL: fmt.Sprintf("http://s.example/%d", i), State: st}
		got, err := decodeState(rec.encode())
		if err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("state %d: decoded %+v, want %+v", i, got, rec)
		}
	}
}

// TestStateReadsJSONForm: a store written before the binary form keeps
// its crawl states: State reads the JSON form, and SetState then writes
// the binary one, smaller than the JSON for a page's sorted outlinks.
func TestStateReadsJSONForm(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	u := "http://a.example/page"
	st := CrawlState{ETag: `"e"`, Status: 200, Digest: id.Sum([]byte("x")), Checked: t0}
	for i := range 10 {
		st.Outlinks = append(st.Outlinks, fmt.Sprintf("http://a.example/dir/page-%02d.html", i))
	}
	old, err := json.Marshal(stateRecord{URL: u, State: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Put(crawlStateKey(u), old, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.State(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("state from JSON %+v, want %+v", got, st)
	}
	if err := s.SetState(ctx, u, st); err != nil {
		t.Fatal(err)
	}
	val, err := s.db.Get(crawlStateKey(u), nil)
	if err != nil {
		t.Fatal(err)
	}
	if val[0] != stateBinary || 2*len(val) > len(old) {
		t.Fatalf("stored state: first byte %d, %d bytes (JSON %d)", val[0], len(val), len(old))
	}
	if got, err = s.State(ctx, u); err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("state from binary %+v, %v; want %+v", got, err, st)
	}
}

// TestStateCorrupt: a damaged state is ErrCorrupt, never a wrong state.
func TestStateCorrupt(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	u := "http://a.example/"
	good := stateRecord{URL: u, State: CrawlState{ETag: `"e"`, Outlinks: []string{"http://a.example/x", "http://a.example/y"}}}.encode()
	bad := [][]byte{
		{},
		{stateBinary},
		good[:len(good)-1],
		append(append([]byte{}, good...), 0),
		[]byte("{not json"),
	}
	// An outlink claiming a longer shared prefix than the one before it.
	bad = append(bad, append(stateRecord{URL: u}.encode()[:len(stateRecord{URL: u}.encode())-1], 1, 5, 1, 'x'))
	for i, val := range bad {
		if err := s.db.Put(crawlStateKey(u), val, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.State(ctx, u); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("value %d (%q): %v, want ErrCorrupt", i, val, err)
		}
	}
}

// TestCheckedOn: a URL counts as fetched on a day when a check (Touch) or
// its crawl state's Checked falls on it, and on no other day.
func TestCheckedOn(t *testing.T) {
	s := openTest(t, Options{NoSync: true})
	ctx := context.Background()
	u, other := "http://a.example/", "http://b.example/"
	mustPut(t, s, capture(u, t0, "x"))
	must(t, s.Touch(ctx, u, t0.Add(2*day))) // a 304 on day 2
	must(t, s.SetState(ctx, other, CrawlState{Checked: t0.Add(day)}))
	d0 := s.DayOf(t0)
	for _, c := range []struct {
		url  string
		day  int64
		want bool
	}{
		{u, d0 + 2, true}, {u, d0 + 1, false}, {u, d0 + 3, false},
		{other, d0 + 1, true}, {other, d0 + 2, false},
		{"http://c.example/", d0 + 2, false},
	} {
		if got, err := s.CheckedOn(ctx, c.url, c.day); err != nil || got != c.want {
			t.Errorf("CheckedOn(%s, day +%d) = %v, %v; want %v", c.url, c.day-d0, got, err, c.want)
		}
	}
}
