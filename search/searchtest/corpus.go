package searchtest

import (
	"context"
	"fmt"
	"html"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
)

// Day0 is the first capture day of a Corpus made by New.
var Day0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Day returns the capture time of day d (1-based): Start plus d-1 Steps.
func (c *Corpus) Day(d int) time.Time { return c.Start.Add(time.Duration(d-1) * c.Step) }

// Page is one page of a Corpus as captured on day 1.
type Page struct {
	URL   string
	Title string
	Body  string // text of the body's paragraphs
}

// Query is a query and the page it must find.
type Query struct {
	Q      string
	Target string // URL
}

// Corpus is a sample web: its pages, a page that gains AddedWord on day 2
// (Changed), a page that turns 404 on day 3 (Gone), and queries.
type Corpus struct {
	Pages     []Page
	Changed   string // URL of the page that gains AddedWord on day 2
	AddedWord string
	Gone      string // URL of the page that is 404 from day 3
	Queries   []Query
	// Start is day 1's capture time (Day0) and Step the time between
	// days (24 h). A ring test whose gateways must show the captures
	// sets them within the witness delay (archive.MaxWitnessDelay) of now.
	Start time.Time
	Step  time.Duration
	vocab []string
}

// syllables build the vocabulary's words.
var syllables = []string{"ka", "lo", "mi", "ter", "van", "dor", "bel", "sun", "pri", "gal", "nor", "west", "fen", "rud", "tal", "qui"}

// New returns a corpus of n pages on hosts site0.example … site7.example.
func New(seed uint64, n int) *Corpus {
	r := rand.New(rand.NewPCG(seed, 38))
	c := &Corpus{Start: Day0, Step: 24 * time.Hour}
	seen := map[string]bool{}
	for len(c.vocab) < 4000 {
		k := 2 + r.IntN(3)
		var b strings.Builder
		for range k {
			b.WriteString(syllables[r.IntN(len(syllables))])
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			c.vocab = append(c.vocab, w)
		}
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(c.vocab)-1))
	words := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = c.vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	for i := range n {
		p := Page{
			URL:   fmt.Sprintf("http://site%d.example/page/%d", i%8, i),
			Title: words(3 + r.IntN(4)),
			Body:  words(80 + r.IntN(300)),
		}
		c.Pages = append(c.Pages, p)
	}
	c.Changed = c.Pages[1].URL
	c.AddedWord = "zephyrquantum"
	c.Gone = c.Pages[2].URL
	return c
}

// Doc returns the title and text of a page as captured on day d, and
// false when it is 404 that day.
func (c *Corpus) Doc(i, d int) (title, body string, ok bool) {
	p := c.Pages[i]
	if p.URL == c.Gone && d >= 3 {
		return "", "", false
	}
	body = p.Body
	if p.URL == c.Changed && d >= 2 {
		body += " " + c.AddedWord
	}
	return p.Title, body, true
}

// HTML renders a page.
func HTML(title, body string) []byte {
	return []byte("<!doctype html><html><head><title>" + html.EscapeString(title) +
		"</title><style>p{color:red}</style></head><body><h1>" + html.EscapeString(title) +
		"</h1><p>" + html.EscapeString(body) + "</p><script>var notIndexed=1</script></body></html>")
}

// Capture returns page i's capture on day d.
func (c *Corpus) Capture(i, d int) archive.Capture {
	title, body, ok := c.Doc(i, d)
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	if !ok {
		return archive.Capture{URL: c.Pages[i].URL, Time: c.Day(d), Status: 404, Header: h, Body: []byte("<title>Not found</title>gone")}
	}
	return archive.Capture{URL: c.Pages[i].URL, Time: c.Day(d), Status: 200, Header: h, Body: HTML(title, body)}
}

// Putter stores captures (archive.Store).
type Putter interface {
	Put(ctx context.Context, c archive.Capture) (archive.Version, bool, error)
}

// Load stores days 1 to days of the corpus (a page unchanged since the
// day before stores nothing new), calling each after a day's captures.
func (c *Corpus) Load(ctx context.Context, s Putter, days int, each func(day int, added []archive.Version) error) error {
	for d := 1; d <= days; d++ {
		var added []archive.Version
		for i := range c.Pages {
			v, ok, err := s.Put(ctx, c.Capture(i, d))
			if err != nil {
				return fmt.Errorf("load day %d: %w", d, err)
			}
			if ok {
				added = append(added, v)
			}
		}
		if each != nil {
			if err := each(d, added); err != nil {
				return err
			}
		}
	}
	return nil
}
