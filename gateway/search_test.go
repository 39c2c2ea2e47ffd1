package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

// searchFixture is an archive of a small corpus, its local index and a
// gateway over both.
func searchFixture(t *testing.T, mod ...func(*Config)) (*Server, *searchtest.Corpus) {
	t.Helper()
	arc, st, c := searchArchive(t, nil)
	return newServer(t, arc, append([]func(*Config){func(c *Config) { c.Search = st }}, mod...)...), c
}

// searchArchive stores a small corpus's four days and more (captures
// added after them), and indexes it all.
func searchArchive(t *testing.T, more []archive.Capture) (*archive.Store, *search.Store, *searchtest.Corpus) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	arc, err := archive.Open(filepath.Join(dir, "archive"), archive.Options{NoSync: true, DiskReserve: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arc.Close() })
	st, err := search.OpenStore(filepath.Join(dir, "search"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := searchtest.New(1, 20)
	if err := c.Load(ctx, arc, 4, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		if _, _, err := arc.Put(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ix := &search.Indexer{Archive: arc, Sink: search.StoreSink{Store: st}, Docs: st}
	if _, err := ix.Backfill(ctx, arc, nil); err != nil {
		t.Fatal(err)
	}
	return arc, st, c
}

func TestSearchPage(t *testing.T) {
	s, c := searchFixture(t)
	day2 := c.Day(2).UTC().Format(TimestampLayout)
	w := getUI(t, s, "/search?q="+url.QueryEscape(c.AddedWord)+"&at="+day2)
	body := w.Body.String()
	for _, want := range []string{
		`href="/web/` + day2 + `/` + c.Changed + `"`,
		"<mark>" + c.AddedWord + "</mark>",
		`value="` + c.AddedWord + `"`,
		"1 matching page",
	} {
		if w.Code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%d: page lacks %s:\n%s", w.Code, want, body)
		}
	}
	// Escaped query, no results.
	w = getUI(t, s, "/search?q="+url.QueryEscape(`<script>x</script>`)+"&at="+c.Day(1).UTC().Format(TimestampLayout))
	if strings.Contains(w.Body.String(), "<script>x") || !strings.Contains(w.Body.String(), "No archived page holds every word") {
		t.Errorf("unescaped or missing answer:\n%s", w.Body.String())
	}
	// The framed replay's banner searches as of its capture.
	if w := getUI(t, s, "/web/"+day2+"/"+c.Changed); !strings.Contains(w.Body.String(), `<form method="get" action="/search" role="search">`) ||
		!strings.Contains(w.Body.String(), `name="at" value="`+day2+`"`) {
		t.Errorf("banner lacks the search box:\n%s", w.Body.String())
	}
	// The home page has a search box; bad input gets a clear 400.
	if w := getUI(t, s, "/"); !strings.Contains(w.Body.String(), `action="/search"`) {
		t.Errorf("home page lacks the search box")
	}
	for _, target := range []string{"/search?q=the", "/search?q=x&at=soon", "/search?q=x&page=0", "/search?q=x&cursor=!!&output=json", "/search?q=site:"} {
		if w := getUI(t, s, target); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", target, w.Code)
		}
	}
}

func TestSearchJSONAndCursor(t *testing.T) {
	s, c := searchFixture(t)
	q := strings.Fields(c.Pages[0].Body)[0]
	var all []string
	cursor := ""
	for range 10 {
		w := getUI(t, s, "/search?output=json&limit=3&q="+url.QueryEscape(q)+"&cursor="+cursor)
		var ans searchJSON
		if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil || w.Code != 200 {
			t.Fatalf("%d %v: %s", w.Code, err, w.Body.String())
		}
		for _, r := range ans.Results {
			all = append(all, r.URL)
			if r.Replay != "/web/"+r.Timestamp+"/"+r.URL {
				t.Errorf("replay link %q", r.Replay)
			}
		}
		if cursor = ans.Next; cursor == "" {
			break
		}
	}
	w := getUI(t, s, "/search?output=json&limit=100&q="+url.QueryEscape(q))
	var one searchJSON
	if err := json.Unmarshal(w.Body.Bytes(), &one); err != nil {
		t.Fatal(err)
	}
	if len(all) < 4 || len(all) != len(one.Results) {
		t.Fatalf("paged %d results, one page %d", len(all), len(one.Results))
	}
	for i := range all {
		if all[i] != one.Results[i].URL {
			t.Errorf("result %d: paged %s, one page %s", i, all[i], one.Results[i].URL)
		}
	}
}

// blockOne is an AccessControl that blocks one URL's captures.
type blockOne struct{ url string }

func (b blockOne) Decide(u string, _ time.Time) access.Decision {
	if u == b.url {
		return access.Decision{Action: access.Block}
	}
	return access.Decision{Action: access.Allow}
}
func (blockOne) List() []access.Listed                             { return nil }
func (blockOne) Add(context.Context, access.Rule, bool) error      { return nil }
func (blockOne) Remove(context.Context, string, bool) (int, error) { return 0, nil }

// TestSearchAccessRules: a capture the access rules keep from readers is
// never a result, though its postings are indexed.
func TestSearchAccessRules(t *testing.T) {
	open, c := searchFixture(t)
	if w := getUI(t, open, "/search?output=json&q="+url.QueryEscape(c.AddedWord)); !strings.Contains(w.Body.String(), c.Changed) {
		t.Fatalf("without rules, %s is not found: %s", c.Changed, w.Body.String())
	}
	s, _ := searchFixture(t, func(cfg *Config) { cfg.Access = blockOne{c.Changed} })
	w := getUI(t, s, "/search?output=json&q="+url.QueryEscape(c.AddedWord))
	if strings.Contains(w.Body.String(), c.Changed) || w.Code != 200 {
		t.Errorf("a blocked capture is a result: %d %s", w.Code, w.Body.String())
	}
}

func TestSearchWithoutIndex(t *testing.T) {
	s := newServer(t, &fakeArchive{})
	if w := getUI(t, s, "/search?q=x"); w.Code != http.StatusNotImplemented {
		t.Errorf("/search without an index: %d", w.Code)
	}
	if w := getUI(t, s, "/"); strings.Contains(w.Body.String(), `action="/search"`) {
		t.Errorf("home page offers search without an index")
	}
}
