package search

import (
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Indexing needs a version's distinct terms and their counts, not each
// token's term: docTerms tokenizes the text, counts each distinct raw
// token (the tokenizer's bytes, case kept) and runs the analyzer's
// token filters (possessive, lower case, stop words, Porter) once per
// distinct raw token, through a process-wide cache of bounded size.
// Every filter of the English analyzer maps one token to at most one
// token from its bytes alone, so the terms and counts are Analyze's
// (TestDocTermsSameAsAnalyze, FuzzDocTerms). A prose page of 2,000
// tokens has about 300 distinct ones, most of them in the cache.

// termFreq is one distinct term of a version and its frequencies.
type termFreq struct {
	term    string
	tf      uint32 // in title and text
	titleTF uint32
}

// termCacheCap bounds the raw tokens termCache keeps; past it the cache
// starts again empty. Tokens longer than termCacheLen are filtered
// without it, so it holds at most about 6 MiB (a few hundred KiB of
// prose's words).
const (
	termCacheCap = 1 << 15
	termCacheLen = 2 * MaxTermLen
)

// filtered is a raw token's term, ok false for a token the filters drop
// (a stop word) or a term longer than MaxTermLen.
type filtered struct {
	term string
	ok   bool
}

// termCache maps raw tokens to their terms.
var termCache = struct {
	sync.Mutex
	m map[string]filtered
}{m: map[string]filtered{}}

// termOfRaw returns the term the analyzer's filters make of one raw
// token.
func termOfRaw(a *analysis.DefaultAnalyzer, raw []byte) filtered {
	cache := len(raw) <= termCacheLen
	if cache {
		termCache.Lock()
		f, hit := termCache.m[string(raw)]
		termCache.Unlock()
		if hit {
			return f
		}
	}
	var f filtered
	ts := analysis.TokenStream{&analysis.Token{Term: append([]byte(nil), raw...), Position: 1, End: len(raw)}}
	for _, tf := range a.TokenFilters {
		ts = tf.Filter(ts)
	}
	if len(ts) == 1 && len(ts[0].Term) > 0 && len(ts[0].Term) <= MaxTermLen {
		f = filtered{term: string(ts[0].Term), ok: true}
	}
	if !cache {
		return f
	}
	termCache.Lock()
	if len(termCache.m) >= termCacheCap {
		clear(termCache.m)
	}
	termCache.m[string(raw)] = f
	termCache.Unlock()
	return f
}

// rawCount is a distinct raw token of a version and its counts.
type rawCount struct {
	raw        string
	n, inTitle uint32
}

// docTerms returns the distinct terms of a version's title and text with
// their frequencies, in first-occurrence order (the title's first), and
// the version's length in terms: what VersionPostings makes of Analyze's
// output.
func docTerms(title, text string) ([]termFreq, uint32) {
	a, err := english()
	if err != nil {
		panic(err) // as Analyze: only a binary built without bleve's registry
	}
	da, ok := a.(*analysis.DefaultAnalyzer)
	if !ok || len(da.CharFilters) > 0 {
		return docTermsSlow(title, text)
	}
	idx := map[string]int{}
	var raws []rawCount
	add := func(raw []byte, inTitle bool) {
		i, seen := idx[string(raw)]
		if !seen {
			i = len(raws)
			raws = append(raws, rawCount{raw: string(raw)})
			idx[raws[i].raw] = i
		}
		raws[i].n++
		if inTitle {
			raws[i].inTitle++
		}
	}
	count := func(s string, inTitle bool) {
		b := []byte(s)
		if _, fast := da.Tokenizer.(asciiTokenizer); !fast || !isASCII(s) {
			for _, t := range da.Tokenizer.Tokenize(b) {
				add(t.Term, inTitle)
			}
			return
		}
		// The ASCII tokenizer's segments, without building its tokens.
		w := asciiWords{in: b}
		for {
			start, end, _, ok := w.next()
			if !ok {
				return
			}
			add(b[start:end], inTitle)
		}
	}
	count(title, true)
	count(text, false)
	out := make([]termFreq, 0, len(raws))
	at := make(map[string]int, len(raws))
	docLen := uint32(0)
	for _, r := range raws {
		f := termOfRaw(da, []byte(r.raw))
		if !f.ok {
			continue
		}
		docLen += r.n
		i, seen := at[f.term]
		if !seen {
			i = len(out)
			at[f.term] = i
			out = append(out, termFreq{term: f.term})
		}
		out[i].tf += r.n
		out[i].titleTF += r.inTitle
	}
	return out, docLen
}

// docTermsSlow is docTerms through Analyze, for an analyzer docTerms
// cannot take apart.
func docTermsSlow(title, text string) ([]termFreq, uint32) {
	ti, body := Analyze(title), Analyze(text)
	at := map[string]int{}
	var out []termFreq
	add := func(term string, inTitle bool) {
		i, ok := at[term]
		if !ok {
			i = len(out)
			at[term] = i
			out = append(out, termFreq{term: term})
		}
		out[i].tf++
		if inTitle {
			out[i].titleTF++
		}
	}
	for _, t := range ti {
		add(t.Term, true)
	}
	for _, t := range body {
		add(t.Term, false)
	}
	return out, uint32(len(ti) + len(body))
}
