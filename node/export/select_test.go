package export

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/archivetest"
)

// selReply returns the export reply of s for q.
func selReply(t *testing.T, s *archive.Store, q archive.Query) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Serve(context.Background(), s, archive.ExportOptions{Query: q}, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// mergeCursors merges the replies of stores to q, read as for cq, and
// returns the cursors written.
func mergeCursors(t *testing.T, q archive.Query, stores ...*archive.Store) []string {
	t.Helper()
	cq, err := cdx.FromStore(q)
	if err != nil {
		t.Fatal(err)
	}
	var ms []*Member
	for _, s := range stores {
		m, err := Open("test", bytes.NewReader(selReply(t, s, q)), nil, cq, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var cursors []string
	if err := Merge(ms, &bytes.Buffer{}, func(c string) { cursors = append(cursors, c) }); err != nil {
		t.Fatal(err)
	}
	return cursors
}

// TestMergeLatest: with Latest, each member sends its newest version of
// a URL and the merge writes the newest any member holds: a member that
// lags (its newest is older) does not add its version.
func TestMergeLatest(t *testing.T) {
	a := archivetest.TwoDays(t, q0, "http://h.example/1", "http://h.example/3")
	b := archivetest.TwoDays(t, q0.Add(2*24*time.Hour), "http://h.example/2", "http://h.example/3")
	lag := archivetest.TwoDays(t, q0.Add(-24*time.Hour), "http://h.example/2")
	all := mergeCursors(t, archive.Query{Host: "h.example"}, a, b, lag)
	var want []string
	for i, c := range all {
		k, _ := archive.ParseCursor(c)
		if i+1 == len(all) || !bytes.HasPrefix([]byte(all[i+1]), []byte(k.URL+" ")) {
			want = append(want, c) // the last, newest, of its URL
		}
	}
	got := mergeCursors(t, archive.Query{Host: "h.example", Filter: archive.Filter{Latest: true}}, a, lag, b)
	if len(want) != 3 || !slices.Equal(got, want) {
		t.Fatalf("latest merge %q, want %q", got, want)
	}
}

// TestMemberChecksFilters: a member that ignores the query's status or
// media type, or its URL filters (a node that does not know them), breaks
// the protocol loudly rather than widen the export.
func TestMemberChecksFilters(t *testing.T) {
	s := archivetest.TwoDays(t, q0, "http://h.example/1", "http://h.example/2")
	unfiltered := selReply(t, s, archive.Query{Host: "h.example"})
	for _, f := range []archive.Filter{{Status: 404}, {Type: "image/*"}, {Regex: ".*/2"}} {
		q := cdx.Query{URL: "h.example", Match: cdx.MatchHost, Filter: f}
		m := &Member{name: "old", r: bufio.NewReader(bytes.NewReader(unfiltered)), q: q}
		if err := m.next(); !errors.Is(err, ErrBadReply) {
			t.Errorf("%+v: a reply outside it gives %v, want ErrBadReply", f, err)
		}
	}
	q := cdx.Query{URL: "h.example", Match: cdx.MatchHost, Filter: archive.Filter{Status: 200, Type: "text/*"}}
	m := &Member{name: "ok", r: bufio.NewReader(bytes.NewReader(unfiltered)), q: q}
	if err := m.next(); err != nil || m.done {
		t.Fatalf("a reply inside the filters: %v", err)
	}
}
