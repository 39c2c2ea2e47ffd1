package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
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

// TestSearchPageNavigation: the results page links its neighbours (same
// query, time, site and page size), numbers its results from the page's
// first, keeps a site filter in its form with a way out of it, answers a
// phrase, and says so past the last page.
func TestSearchPageNavigation(t *testing.T) {
	s, c := searchFixture(t)
	q := strings.Fields(c.Pages[0].Body)[0] // a common word
	day2 := c.Day(2).UTC().Format(TimestampLayout)
	esc := func(s string) string { return strings.ReplaceAll(s, "&", "&amp;") }
	page := func(target string) string {
		t.Helper()
		w := getUI(t, s, target)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d\n%s", target, w.Code, w.Body)
		}
		return w.Body.String()
	}
	// Page 1's next link resumes by cursor, numbered as page 2: it shows
	// what page=2 shows.
	nextLink := regexp.MustCompile(`href="([^"]*)" rel="next"`)
	next := func(body string) string {
		t.Helper()
		m := nextLink.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no next link:\n%s", body)
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}
	results := regexp.MustCompile(`<li><a href="([^"]*)"`)
	hrefs := func(body string) (out []string) {
		for _, m := range results.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	p1 := page(searchURL(q, day2, "", 3, 1))
	n2 := next(p1)
	if !strings.HasPrefix(n2, searchURL(q, day2, "", 3, 2)+"&cursor=") {
		t.Errorf("page 1's next link %s", n2)
	}
	p2, byNumber := page(n2), page(searchURL(q, day2, "", 3, 2))
	if got, want := hrefs(p2), hrefs(byNumber); len(got) != 3 || !slices.Equal(got, want) {
		t.Errorf("page 2 by cursor %v, by number %v", got, want)
	}
	if !strings.HasPrefix(next(p2), searchURL(q, day2, "", 3, 3)+"&cursor=") {
		t.Errorf("page 2's next link %s", next(p2))
	}
	for _, want := range []string{`<ol class="results" start="4">`, `href="` + esc(searchURL(q, day2, "", 3, 1)) + `" rel="prev"`} {
		if !strings.Contains(p2, want) {
			t.Errorf("page 2 lacks %s:\n%s", want, p2)
		}
	}
	if strings.Contains(p1, `rel="prev"`) {
		t.Errorf("the first page links a previous one")
	}
	// A result dropped at verification (blocked) shifts the pages:
	// following next links shows every other result once.
	all := hrefs(page(searchURL(q, day2, "", 100, 1)))
	blocked := all[1][strings.Index(all[1], "/http")+1:] // "/web/<its ts>/<url>"
	sb, _ := searchFixture(t, func(cfg *Config) { cfg.Access = blockOne{blocked} })
	b1 := getUI(t, sb, searchURL(q, day2, "", 3, 1)).Body.String()
	b2 := getUI(t, sb, next(b1)).Body.String()
	if got, want := append(hrefs(b1), hrefs(b2)...), slices.Delete(slices.Clone(all), 1, 2)[:6]; !slices.Equal(got, want) {
		t.Errorf("two pages with %s blocked: %v\nwant %v", blocked, got, want)
	}
	if body := page(searchURL(q, day2, "", 3, 1000)); !strings.Contains(body, "No more results") || strings.Contains(body, `rel="next"`) {
		t.Errorf("past the last page:\n%s", body)
	}
	// site: kept by the form, with a link to every site; its results are
	// on the site alone.
	host := "site1.example"
	body := page(searchURL(q, day2, host, 0, 1))
	for _, want := range []string{`<input type="hidden" name="site" value="` + host + `">`, `href="` + esc(searchURL(q, day2, "", 0, 0)) + `">search every site</a>`} {
		if !strings.Contains(body, want) {
			t.Errorf("site page lacks %s:\n%s", want, body)
		}
	}
	if n, on := strings.Count(body, `<li><a href="/web/`), strings.Count(body, `/http://`+host+`/"><b>`)+strings.Count(body, `/http://`+host+`/page`); n == 0 || n != on {
		t.Errorf("site:%s: %d results, %d on the site:\n%s", host, n, on, body)
	}
	// A phrase of the changed page, as of day 2.
	w := strings.Fields(c.Pages[3].Body)
	phrase := `"` + w[4] + " " + w[5] + `"`
	var ans searchJSON
	if err := json.Unmarshal(getUI(t, s, "/search?output=json&limit=100&at="+day2+"&q="+url.QueryEscape(phrase)).Body.Bytes(), &ans); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ans.Results, func(r searchJSONResult) bool { return r.URL == c.Pages[3].URL }) {
		t.Errorf("phrase %s: %s not among %v", phrase, c.Pages[3].URL, ans.Results)
	}
}
