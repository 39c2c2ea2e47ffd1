package search_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/search"
)

func TestEnginePagesAndCursor(t *testing.T) {
	f := newFixture(t, 120)
	ctx := context.Background()
	at := f.c.Day(2).Add(time.Hour)
	q := strings.Fields(f.c.Pages[0].Body)[0] // a common word: many matches
	all := f.urls(t, q, at, 100)
	if len(all) < 25 {
		t.Fatalf("%q: %d results, want many", q, len(all))
	}
	var byCursor, byPage []string
	cur := ""
	for p := 1; p <= 3; p++ {
		r, err := f.eng.Search(ctx, search.Request{Query: q, At: at, Limit: 7, Cursor: cur})
		must(t, err)
		for _, x := range r.Results {
			byCursor = append(byCursor, x.URL)
		}
		cur = r.Next
		r, err = f.eng.Search(ctx, search.Request{Query: q, At: at, Limit: 7, Page: p})
		must(t, err)
		for _, x := range r.Results {
			byPage = append(byPage, x.URL)
		}
	}
	if !slices.Equal(byCursor, all[:21]) || !slices.Equal(byPage, all[:21]) {
		t.Errorf("pages by cursor %v\nby number %v\nwant %v", byCursor, byPage, all[:21])
	}
	if _, err := f.eng.Search(ctx, search.Request{Query: q, Cursor: "!"}); err == nil {
		t.Error("a bad cursor: no error")
	}
}

func TestEnginePhraseAndSite(t *testing.T) {
	f := newFixture(t, 120)
	at := f.c.Day(2).Add(time.Hour)
	p := f.c.Pages[7]
	w := strings.Fields(p.Body)
	phrase := `"` + w[10] + " " + w[11] + " " + w[12] + `"`
	if got := f.urls(t, phrase, at, 100); !slices.Contains(got, p.URL) {
		t.Errorf("phrase %s: %v lacks %s", phrase, got, p.URL)
	}
	reversed := `"` + w[12] + " " + w[11] + " " + w[10] + `"`
	for _, u := range f.urls(t, reversed, at, 100) {
		if u == p.URL && !strings.Contains(p.Body, w[12]+" "+w[11]+" "+w[10]) {
			t.Errorf("reversed phrase %s found %s", reversed, u)
		}
	}
	host := "site7.example"
	got := f.urls(t, w[0]+" site:"+host, at, 100)
	if len(got) == 0 {
		t.Fatalf("site:%s: nothing", host)
	}
	for _, u := range got {
		if !strings.HasPrefix(u, "http://"+host+"/") {
			t.Errorf("site:%s gave %s", host, u)
		}
	}
}

// liar is a Source that adds invented postings (every URL of the corpus
// claims every term, with a high frequency) to the honest ones.
type liar struct {
	search.Source
	urls []string
}

func (l liar) Postings(ctx context.Context, q search.PostingQuery) (search.PostingList, error) {
	pl, err := l.Source.Postings(ctx, q)
	for _, u := range l.urls {
		pl.Postings = append([]search.Posting{{Term: q.Term, Key: id.OfString(u), URL: u, From: 0, To: search.Open, TF: 50, DocLen: 60}}, pl.Postings...)
	}
	pl.Complete = false
	return pl, err
}

// blocked is a Texts that refuses some URLs, as access rules or a purge do.
type blocked struct {
	search.Texts
	no string
}

func (b blocked) Text(ctx context.Context, u string, at time.Time) (search.Capture, error) {
	if u == b.no {
		return search.Capture{}, errors.New("blocked")
	}
	return b.Texts.Text(ctx, u, at)
}

func TestEngineVerifies(t *testing.T) {
	f := newFixture(t, 120)
	at := f.c.Day(2).Add(time.Hour)
	qs := f.c.TargetQueries(5, 10)
	var want [][]string
	for _, q := range qs {
		want = append(want, f.urls(t, q.Q, at, 10))
	}
	var urls []string
	for _, p := range f.c.Pages {
		urls = append(urls, p.URL)
	}
	f.eng.Source = liar{Source: f.st, urls: urls}
	for i, q := range qs {
		if got := f.urls(t, q.Q, at, 10); !slices.Equal(got, want[i]) {
			t.Errorf("invented postings changed %q: %v, want %v", q.Q, got, want[i])
		}
	}
	f.eng.Source = f.st
	f.eng.Texts = blocked{Texts: f.eng.Texts, no: qs[0].Target}
	if got := f.urls(t, qs[0].Q, at, 10); slices.Contains(got, qs[0].Target) {
		t.Errorf("a blocked capture appears: %v", got)
	}
}

// TestBackfillEqualsCrawlTime indexes the same archive by a backfill into
// a second store: both answer alike.
func TestBackfillEqualsCrawlTime(t *testing.T) {
	f := newFixture(t, 80)
	ctx := context.Background()
	st, err := search.OpenStore(filepath.Join(t.TempDir(), "backfill"))
	must(t, err)
	defer st.Close()
	ix := &search.Indexer{Archive: f.arc, Sink: search.StoreSink{Store: st}, Docs: st}
	if _, err := ix.Backfill(ctx, f.arc, nil); err != nil {
		t.Fatal(err)
	}
	if a, b := f.st.Counts(), st.Counts(); a != b {
		t.Errorf("crawl-time index %+v, backfill %+v", a, b)
	}
	eng := &search.Engine{Source: st, Stats: st, Texts: f.eng.Texts}
	for d := 1; d <= 4; d++ {
		at := f.c.Day(d).Add(time.Hour)
		for _, q := range f.c.TargetQueries(9, 5) {
			r, err := eng.Search(ctx, search.Request{Query: q.Q, At: at})
			must(t, err)
			var got []string
			for _, x := range r.Results {
				got = append(got, x.URL)
			}
			if want := f.urls(t, q.Q, at, 10); !slices.Equal(got, want) {
				t.Errorf("day %d %q: backfill %v, crawl time %v", d, q.Q, got, want)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
