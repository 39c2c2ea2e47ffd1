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
	for i := 0; i < len(in); {
		if !isWord(in[i]) {
			i++
			continue
		}
		start := i
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
				goto end
			}
			i++
		}
	end:
		if len(ts) == cap(ts) {
			ts = make([]analysis.Token, 0, min(max(cap(ts), 16), 4096))
		}
		typ := analysis.AlphaNumeric
		if digit && !letter {
			typ = analysis.Numeric
		}
		ts = append(ts, analysis.Token{Term: in[start:i], Start: start, End: i, Position: pos, Type: typ})
		rv = append(rv, &ts[len(ts)-1])
		pos++
	}
	return rv
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
