package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/id"
	fts "github.com/herod-archive/herod/search"
)

// CorpusModel is the text model a search simulation draws its terms,
// documents and posting lists from: term frequency Zipf by rank, the most
// frequent ranks stop words that the analyzer drops, documents of
// DocTerms analyzed tokens drawn independently. A term of probability p
// (among the tokens left) then occurs in df = N·(1 − (1 − p)^DocTerms)
// of N pages. Zero values mean the defaults, which are assumptions about
// web text (not measurements): see docs/search.md.
type CorpusModel struct {
	Vocabulary int     // distinct terms, stop words included (default 1,000,000)
	Zipf       float64 // exponent s of frequency by rank, ∝ rank^-s (default 1.0)
	StopWords  int     // the most frequent ranks, dropped by the analyzer (default 100)
	DocTerms   int     // tokens a page after stop words (default 500)
}

func (c CorpusModel) withDefaults() CorpusModel {
	c.Vocabulary = cmp.Or(c.Vocabulary, 1_000_000)
	c.Zipf = cmp.Or(c.Zipf, 1.0)
	c.StopWords = cmp.Or(c.StopWords, 100)
	c.DocTerms = cmp.Or(c.DocTerms, 500)
	return c
}

// corpus is a CorpusModel made ready to draw from, for N pages.
type corpus struct {
	m   CorpusModel
	n   int64     // pages
	cdf []float64 // cumulative probability of the content ranks StopWords+1..Vocabulary
}

func newCorpus(m CorpusModel, pages int64) *corpus {
	m = m.withDefaults()
	c := &corpus{m: m, n: pages, cdf: make([]float64, m.Vocabulary-m.StopWords)}
	sum := 0.0
	for i := range c.cdf {
		sum += math.Pow(float64(m.StopWords+1+i), -m.Zipf)
		c.cdf[i] = sum
	}
	for i := range c.cdf {
		c.cdf[i] /= sum
	}
	return c
}

// prob returns the share of a page's analyzed tokens that are rank r.
func (c *corpus) prob(r int) float64 {
	i := r - c.m.StopWords - 1
	if i == 0 {
		return c.cdf[0]
	}
	return c.cdf[i] - c.cdf[i-1]
}

// draw returns a content rank drawn by frequency.
func (c *corpus) draw(rng *rand.Rand) int {
	return c.m.StopWords + 1 + sort.SearchFloat64s(c.cdf, rng.Float64())
}

// df returns how many of the pages hold rank r.
func (c *corpus) df(r int) int64 {
	p := c.prob(r)
	return max(1, int64(math.Round(float64(c.n)*-math.Expm1(float64(c.m.DocTerms)*math.Log1p(-p)))))
}

// word returns the term of rank r: a made-up word of 4 to 9 letters, the
// same for the same rank.
func word(r int) string {
	h := uint64(r)*0x9e3779b97f4a7c15 + 1
	n := 4 + int(h>>59)%6
	var b strings.Builder
	for range n {
		h = h*6364136223846793005 + 1442695040888963407
		b.WriteByte(byte('a' + (h>>33)%26))
	}
	return fmt.Sprintf("%s%d", b.String()[:n-1], r%10)
}

// pageURL returns the canonical URL of page d: 50 to 60 bytes, as on
// sites of many sections.
func pageURL(d int64) string {
	return fmt.Sprintf("https://www.host%d.example/articles/%d/page-%d.html", d%100_003, d%97, d)
}

// posting returns the posting of rank r in page d, live since from.
func (c *corpus) posting(r int, d int64, from int64) fts.Posting {
	u := pageURL(d)
	h := uint64(d)*0x9e3779b97f4a7c15 ^ uint64(r)
	tf := 1 + uint32(h>>61)
	return fts.Posting{Term: word(r), Key: id.OfString(u), URL: u, From: from, To: fts.Open,
		TF: tf, TitleTF: uint32(h>>60) & 1 & tf, DocLen: uint32(c.m.DocTerms) + uint32(h>>40)%200}
}

// pageText returns a page's text: title and body of words drawn from the
// model (stop words included, as a page shows them).
func (c *corpus) pageText(rng *rand.Rand) (title, body string) {
	var b strings.Builder
	words := func(k int) {
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			// Stop words make about half of English running text.
			if rng.IntN(2) == 0 {
				b.WriteString(word(1 + rng.IntN(c.m.StopWords)))
			} else {
				b.WriteString(word(c.draw(rng)))
			}
		}
	}
	words(8)
	title = b.String()
	b.Reset()
	words(2 * c.m.DocTerms)
	return title, b.String()
}

// captureTime is when the simulated pages were captured: a day before
// the queries.
func captureTime(now time.Time) int64 { return fts.Millis(now.Add(-24 * time.Hour)) }
