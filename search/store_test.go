package search

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

func openTestStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func post(term, url string, from, to int64, tf uint32) Posting {
	return Posting{Term: term, Key: id.OfString(url), URL: url, From: from, To: to, TF: tf, DocLen: 100}
}

func TestStoreLiveRangesAndMerge(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s := openTestStore(t, dir)
	a, b := "http://a.example/", "http://b.example/x"
	must(t, s.Put(ctx, []Posting{post("war", a, 10, Open, 3), post("war", b, 10, Open, 1), post("peace", a, 10, Open, 1)}))
	// The page a changes at 20: its first version's posting is ended
	// (sent again with its end), the new one starts; an open copy sent
	// again later does not reopen it.
	must(t, s.Put(ctx, []Posting{post("war", a, 10, 20, 3), post("war", a, 20, Open, 5)}))
	must(t, s.Put(ctx, []Posting{post("war", a, 10, Open, 3)}))
	for _, tc := range []struct {
		at     int64
		df     int64
		bestTF uint32
	}{{5, 0, 0}, {10, 2, 3}, {19, 2, 3}, {20, 2, 5}, {1000, 2, 5}} {
		l, err := s.Postings(ctx, PostingQuery{Term: "war", At: tc.at})
		must(t, err)
		if l.DF != tc.df || !l.Complete || (tc.df > 0 && l.Postings[0].TF != tc.bestTF) {
			t.Errorf("at %d: %+v, want df %d best tf %d", tc.at, l, tc.df, tc.bestTF)
		}
	}
	if c := s.Counts(); c.Terms != 2 || c.Postings != 4 {
		t.Errorf("counts %+v, want 2 terms 4 postings", c)
	}
	// Keys, site and limit.
	l, err := s.Postings(ctx, PostingQuery{Term: "war", At: 15, Keys: []id.ID{id.OfString(b)}})
	must(t, err)
	if len(l.Postings) != 1 || l.Postings[0].URL != b || l.DF != 2 {
		t.Errorf("keys: %+v", l)
	}
	l, err = s.Postings(ctx, PostingQuery{Term: "war", At: 15, Site: "b.example"})
	must(t, err)
	if l.DF != 1 || l.Postings[0].URL != b {
		t.Errorf("site: %+v", l)
	}
	l, err = s.Postings(ctx, PostingQuery{Term: "war", At: 15, Limit: 1})
	must(t, err)
	if len(l.Postings) != 1 || l.Complete || l.Postings[0].URL != a {
		t.Errorf("limit: %+v", l)
	}
	// Survives a reopen, counts included.
	must(t, s.Close())
	s = openTestStore(t, dir)
	defer s.Close()
	if c := s.Counts(); c.Terms != 2 || c.Postings != 4 {
		t.Errorf("reopened counts %+v", c)
	}
	// Delete (a purge) of a's versions before 20.
	n, err := s.DeleteWhere(ctx, func(u string, from int64) bool { return u == a && from < 20 })
	must(t, err)
	if c := s.Counts(); n != 2 || c.Postings != 2 || c.Terms != 1 {
		t.Errorf("deleted %d, counts %+v", n, c)
	}
}

func TestStoreRefusesBadPostings(t *testing.T) {
	s := openTestStore(t, filepath.Join(t.TempDir(), "s"))
	defer s.Close()
	good := post("war", "http://a.example/", 1, Open, 1)
	for name, p := range map[string]Posting{
		"no term":     post("", "http://a.example/", 1, Open, 1),
		"no url":      post("war", "", 1, Open, 1),
		"ends early":  post("war", "http://a.example/", 5, 2, 1),
		"tf 0":        post("war", "http://a.example/", 1, Open, 0),
		"long term":   post(string(make([]byte, MaxTermLen+1)), "http://a.example/", 1, Open, 1),
		"tf > length": post("war", "http://a.example/", 1, Open, 101),
	} {
		err := s.Put(context.Background(), []Posting{good, p})
		if !errors.Is(err, ErrBadPosting) {
			t.Errorf("%s: %v, want ErrBadPosting", name, err)
		}
	}
	if c := s.Counts(); c.Postings != 0 {
		t.Errorf("a refused batch stored %d postings", c.Postings)
	}
}

func TestStoreRange(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "s"))
	defer s.Close()
	terms := []string{"alpha", "beta", "gamma", "delta", "omega"}
	for _, term := range terms {
		must(t, s.Put(ctx, []Posting{post(term, "http://a.example/", 1, Open, 1)}))
	}
	// The whole circle, then a range that holds exactly one term key.
	n := 0
	must(t, s.Range(ctx, id.ID{}, id.ID{}, func(Posting) error { n++; return nil }))
	if n != len(terms) {
		t.Errorf("whole circle: %d postings", n)
	}
	k := TermKey("gamma")
	var got []string
	must(t, s.Range(ctx, prev(k), k, func(p Posting) error { got = append(got, p.Term); return nil }))
	if len(got) != 1 || got[0] != "gamma" {
		t.Errorf("range (k-1, k]: %v", got)
	}
}

// prev returns x − 1 on the circle.
func prev(x id.ID) id.ID {
	for i := len(x) - 1; i >= 0; i-- {
		x[i]--
		if x[i] != 0xff {
			break
		}
	}
	return x
}

func TestDocStats(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "s"))
	defer s.Close()
	h := int64(docStatsGrain)
	must(t, s.PutDocs(ctx, []DocRow{{Key: id.OfString("a"), URL: "a", From: 0, To: 5 * h, DocLen: 10}, {Key: id.OfString("b"), URL: "b", From: 2 * h, To: Open, DocLen: 30}}))
	for _, tc := range []struct {
		at   int64
		want DocStats
	}{{h / 2, DocStats{1, 10}}, {3 * h, DocStats{2, 40}}, {6 * h, DocStats{1, 30}}} {
		got, err := s.DocStats(ctx, tc.at)
		must(t, err)
		if got != tc.want {
			t.Errorf("at %d: %+v, want %+v", tc.at, got, tc.want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocStatsFollowEnds: a version's end sent with its postings ends its
// document row too, and the cached statistics see it.
func TestDocStatsFollowEnds(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "s"))
	defer s.Close()
	h := int64(docStatsGrain)
	a := "http://a.example/"
	must(t, s.PutDocs(ctx, []DocRow{{Key: id.OfString(a), URL: a, From: 0, To: Open, DocLen: 100}}))
	st, err := s.DocStats(ctx, 3*h)
	must(t, err)
	if st != (DocStats{1, 100}) {
		t.Fatalf("open: %+v", st)
	}
	must(t, s.Put(ctx, []Posting{post("war", a, 0, 2*h, 1)}))
	if st, err = s.DocStats(ctx, 3*h); err != nil || st != (DocStats{}) {
		t.Errorf("ended at 2h, as of 3h: %+v, %v", st, err)
	}
	if c := s.Counts(); c.Docs != 1 || c.Postings != 1 {
		t.Errorf("counts %+v", c)
	}
	n, err := s.DeleteWhere(ctx, func(u string, _ int64) bool { return u == a })
	must(t, err)
	if c := s.Counts(); n != 1 || c.Docs != 0 || c.Postings != 0 || c.Terms != 0 {
		t.Errorf("purged %d: counts %+v", n, c)
	}
}
