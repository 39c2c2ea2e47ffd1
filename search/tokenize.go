package search

import (
	"github.com/blevesearch/bleve/v2/analysis"
)

// asciiTokenizer is bleve's Unicode tokenizer (UAX #29 word segments,
// github.com/blevesearch/segment) with a fast path for text that is all
// ASCII, the bulk of what a crawl indexes: it gives the same tokens
// (terms, offsets, positions and types: FuzzTokenizer compares the two)
// from a loop over bytes instead of segment's state machine, which was
// half of a page's analysis. Text with any other byte goes to Unicode.
type asciiTokenizer struct {
	Unicode analysis.Tokenizer
}

// Tokenize splits input into word tokens.
func (t asciiTokenizer) Tokenize(input []byte) analysis.TokenStream {
	for _, c := range input {
		if c >= 0x80 {
			return t.Unicode.Tokenize(input)
		}
	}
	return tokenizeASCII(input)
}

// ASCII classes of UAX #29's word rules.
func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isWord(c byte) bool   { return isLetter(c) || isDigit(c) || c == '_' }

// tokenizeASCII segments ASCII text as UAX #29 does: letters, digits
// and '_' (ExtendNumLet) join (WB5, WB8-10, WB13a/b); a single ':', '.'
// or '\” between letters joins them (WB6/7: MidLetter, MidNumLet,
// Single_Quote), and a single ',', ';', '.' or '\” between digits joins
// them (WB11/12: MidNum, MidNumLet, Single_Quote). A segment with digits
// and no letter is a number, any other a word; what lies between
// segments is not a token.
func tokenizeASCII(in []byte) analysis.TokenStream {
	// One allocation each for prose (a token about every 6 bytes); more
	// tokens grow them.
	guess := len(in)/6 + 1
	ts := make([]analysis.Token, 0, guess)
	rv := make(analysis.TokenStream, 0, guess)
	pos := 1
	w := asciiWords{in: in}
	for {
		start, end, numeric, ok := w.next()
		if !ok {
			return rv
		}
		if len(ts) == cap(ts) {
			ts = make([]analysis.Token, 0, min(max(cap(ts), 16), 4096))
		}
		typ := analysis.AlphaNumeric
		if numeric {
			typ = analysis.Numeric
		}
		ts = append(ts, analysis.Token{Term: in[start:end], Start: start, End: end, Position: pos, Type: typ})
		rv = append(rv, &ts[len(ts)-1])
		pos++
	}
}

// asciiWords steps through the word segments of ASCII text (see
// tokenizeASCII), for callers that need only their bytes.
type asciiWords struct {
	in []byte
	i  int
}

// next returns the next segment's bounds and whether it is a number
// (digits and no letter); ok is false past the last.
func (w *asciiWords) next() (start, end int, numeric, ok bool) {
	in, i := w.in, w.i
	for i < len(in) && !isWord(in[i]) {
		i++
	}
	if i == len(in) {
		w.i = i
		return 0, 0, false, false
	}
	start = i
	letter, digit := false, false
	for i < len(in) {
		c := in[i]
		switch {
		case isLetter(c):
			letter = true
		case isDigit(c):
			digit = true
		case c == '_':
		case i+1 < len(in) && i > start && joins(in[i-1], c, in[i+1]):
		default:
			w.i = i
			return start, i, digit && !letter, true
		}
		i++
	}
	w.i = i
	return start, i, digit && !letter, true
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// joins reports whether mid, between prev and next, keeps a word whole.
func joins(prev, mid, next byte) bool {
	switch {
	case isLetter(prev) && isLetter(next):
		return mid == ':' || mid == '.' || mid == '\''
	case isDigit(prev) && isDigit(next):
		return mid == ',' || mid == ';' || mid == '.' || mid == '\''
	}
	return false
}
