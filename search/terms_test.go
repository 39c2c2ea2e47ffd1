package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// termsSame reports where docTerms differs from docTermsSlow (the terms
// of Analyze, counted), "" if nowhere.
func termsSame(title, text string) string {
	got, gl := docTerms(title, text)
	want, wl := docTermsSlow(title, text)
	if gl != wl || !slices.Equal(got, want) {
		return "got " + dumpTerms(got, gl) + " want " + dumpTerms(want, wl)
	}
	return ""
}

func dumpTerms(ts []termFreq, n uint32) string {
	var b strings.Builder
	b.WriteString("len " + itoa(int(n)) + ":")
	for _, t := range ts {
		b.WriteString(" " + t.term + "/" + itoa(int(t.tf)) + "/" + itoa(int(t.titleTF)))
	}
	return b.String()
}

// TestDocTermsSameAsAnalyze checks that counting distinct raw tokens
// and filtering each once gives Analyze's terms, frequencies, order and
// length: on prose with possessives, stop words, case, numbers, over-long
// tokens and non-ASCII text, and on random text; and again once the
// term cache has been cleared past its cap.
func TestDocTermsSameAsAnalyze(t *testing.T) {
	long := strings.Repeat("x", MaxTermLen+1)
	cases := [][2]string{
		{"The Archive's Pages", "The archive keeps every version of a page it crawled; the crawler's queue, don't stop. 3.14 and 1,000 hosts."},
		{"", "Running runs ran RUNNING run's runner " + long + " " + long[:MaxTermLen] + " " + strings.Repeat("ab", termCacheLen)},
		{"Ünïcode café", "naïve café — “quoted” Ωmega’s archive’s 東京 data"},
		{"the of and", "a an the"},
		{"", ""},
		{"title only", ""},
	}
	for _, c := range cases {
		if d := termsSame(c[0], c[1]); d != "" {
			t.Fatalf("%q %q: %s", c[0], c[1], d)
		}
	}
	words := strings.Fields("The the archive Archive's pages PAGE running run's don't 3.14 1,000 a:b foo_bar x.y naïve café — stop of")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var ti, tx []string
		for range rng.IntN(5) {
			ti = append(ti, words[rng.IntN(len(words))])
		}
		for range rng.IntN(60) {
			w := words[rng.IntN(len(words))]
			if rng.IntN(8) == 0 {
				w += itoa(rng.IntN(100_000)) // fills the cache
			}
			tx = append(tx, w)
		}
		title, text := strings.Join(ti, " "), strings.Join(tx, " ")
		if d := termsSame(title, text); d != "" {
			t.Fatalf("%q %q: %s", title, text, d)
		}
	}
	termCache.Lock()
	n := len(termCache.m)
	termCache.Unlock()
	if n > termCacheCap {
		t.Fatalf("term cache holds %d raw tokens, cap %d", n, termCacheCap)
	}
}

// FuzzDocTerms checks docTerms against Analyze on any title and text.
func FuzzDocTerms(f *testing.F) {
	f.Add("The Archive's", "running runs ran, don't 3.14 1,000 naïve")
	f.Add("", "a.b 1.2 a1 1a _ __a a'b 1'2 1;2 a;b x:y")
	f.Fuzz(func(t *testing.T, title, text string) {
		if d := termsSame(title, text); d != "" {
			t.Fatalf("%q %q: %s", title, text, d)
		}
	})
}

// BenchmarkVersionPostings indexes 12 KiB of prose (BenchmarkAnalyze's
// page) as VersionPostings does (terms) and through Analyze (analyze),
// and reports the CPU a page.
//
//	go test -run - -bench BenchmarkVersionPostings ./search/
func BenchmarkVersionPostings(b *testing.B) {
	const para = "The archive keeps every version of a page it crawled, and a node's index finds the pages " +
		"that said a word on a given day: 3.14 percent of 1,000 hosts, e.g. the crawler's queue, don't stop. "
	text := strings.Repeat(para, 12<<10/len(para))
	for _, c := range []struct {
		name string
		fn   func(title, text string) ([]termFreq, uint32)
	}{{"analyze", docTermsSlow}, {"terms", docTerms}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				c.fn("A page of the archive", text)
			}
		})
	}
}
