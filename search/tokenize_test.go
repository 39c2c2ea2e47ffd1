package search

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// sameTokens reports where the ASCII path's tokens of in differ from
// bleve's Unicode tokenizer's, "" if nowhere.
func sameTokens(in []byte) string {
	want := unicode.NewUnicodeTokenizer().Tokenize(in)
	got := asciiTokenizer{Unicode: unicode.NewUnicodeTokenizer()}.Tokenize(in)
	if len(got) != len(want) {
		return "token count " + itoa(len(got)) + ", want " + itoa(len(want)) + ": " + dump(got) + " want " + dump(want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if string(g.Term) != string(w.Term) || g.Start != w.Start || g.End != w.End || g.Position != w.Position || g.Type != w.Type {
			return "token " + itoa(i) + ": " + dump(got) + " want " + dump(want)
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

func dump(ts analysis.TokenStream) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s/%d@%d-%d#%d ", t.Term, t.Type, t.Start, t.End, t.Position)
	}
	return b.String()
}

// TestTokenizerASCII compares the ASCII fast path with bleve's Unicode
// tokenizer on random text of the characters UAX #29 treats apart (and
// a quarter of the bytes any ASCII) and on the sample web's prose.
func TestTokenizerASCII(t *testing.T) {
	const alphabet = "aZq09_.:',;- \n\t\"!?/x7"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(4) == 0 { // any ASCII byte: controls, other punctuation
				b[i] = byte(rng.IntN(0x80))
			}
		}
		if d := sameTokens(b); d != "" {
			t.Fatalf("%q: %s", b, d)
		}
	}
	for _, s := range []string{
		"The archive's 3.14 and 1,000,000 pages; e.g. a:b, don't, foo_bar _x_ 12ab34 x.y.z.",
		"Ünïcode falls back: naïve café",
		"",
	} {
		if d := sameTokens([]byte(s)); d != "" {
			t.Fatalf("%q: %s", s, d)
		}
	}
}

// FuzzTokenizer checks that the ASCII fast path and bleve's Unicode
// tokenizer agree on any input.
func FuzzTokenizer(f *testing.F) {
	for _, s := range []string{"a.b 1.2 a1 1a _ __a a'b 1'2 1;2 a;b", "x:y z::w 9,,9", "naïve"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if d := sameTokens(in); d != "" {
			t.Fatalf("%q: %s", in, d)
		}
	})
}

// BenchmarkAnalyze analyzes 12 KiB of English prose (the scale web's
// median page) with bleve's English analyzer as shipped (unicode) and
// with the ASCII fast path (ascii), and reports the CPU a page.
//
//	go test -run - -bench BenchmarkAnalyze ./search/
func BenchmarkAnalyze(b *testing.B) {
	const para = "The archive keeps every version of a page it crawled, and a node's index finds the pages " +
		"that said a word on a given day: 3.14 percent of 1,000 hosts, e.g. the crawler's queue, don't stop. "
	text := []byte(strings.Repeat(para, 12<<10/len(para)))
	en, err := english()
	if err != nil {
		b.Fatal(err)
	}
	fast := en.(*analysis.DefaultAnalyzer)
	slow := *fast
	slow.Tokenizer = fast.Tokenizer.(asciiTokenizer).Unicode
	for _, c := range []struct {
		name string
		a    analysis.Analyzer
	}{{"unicode", &slow}, {"ascii", fast}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				c.a.Analyze(text)
			}
		})
	}
}
