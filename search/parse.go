package search

import (
	"errors"
	"fmt"
	"strings"
)

// ErrEmptyQuery reports a query with no term to look up (empty, or only
// stop words).
var ErrEmptyQuery = errors.New("search: query has no searchable word")

// ErrBadQuery reports a query or cursor that cannot be searched as given
// (site: without a host, too many words, a cursor not from a result
// page): the asker's mistake, not the index's.
var ErrBadQuery = errors.New("search: bad query")

// maxQueryTerms bounds the distinct terms of one query.
const maxQueryTerms = 8

// Parsed is a query after analysis: its distinct terms (every one must
// occur in a result), its phrases (each a run of terms that must occur
// in this order, at these relative positions) and its site filter.
type Parsed struct {
	Terms   []string
	Phrases [][]Token
	Site    string
}

// Parse reads a query: words, "quoted phrases" and site:HOST. Words and
// phrases are analyzed as documents are (Analyze); a word that analyzes
// to nothing (a stop word) is dropped.
func Parse(q string) (Parsed, error) {
	var p Parsed
	seen := map[string]bool{}
	addTerms := func(ts []Token) {
		for _, t := range ts {
			if !seen[t.Term] {
				seen[t.Term] = true
				p.Terms = append(p.Terms, t.Term)
			}
		}
	}
	rest := q
	for rest != "" {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			break
		}
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			var phrase string
			if end < 0 {
				phrase, rest = rest[1:], ""
			} else {
				phrase, rest = rest[1:1+end], rest[2+end:]
			}
			ts := Analyze(phrase)
			addTerms(ts)
			if len(ts) > 1 {
				p.Phrases = append(p.Phrases, ts)
			}
			continue
		}
		word := rest
		if i := strings.IndexAny(rest, " \t\r\n\""); i >= 0 {
			word, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		if h, ok := strings.CutPrefix(strings.ToLower(word), "site:"); ok {
			if h == "" {
				return Parsed{}, fmt.Errorf("%w: site: needs a host", ErrBadQuery)
			}
			p.Site = h
			continue
		}
		addTerms(Analyze(word))
	}
	if len(p.Terms) == 0 {
		return Parsed{}, ErrEmptyQuery
	}
	if len(p.Terms) > maxQueryTerms {
		return Parsed{}, fmt.Errorf("%w: %d distinct words, at most %d are searched", ErrBadQuery, len(p.Terms), maxQueryTerms)
	}
	return p, nil
}

// hasPhrase reports whether tokens hold phrase: its terms at the same
// relative positions.
func hasPhrase(tokens []Token, phrase []Token) bool {
	at := map[int]string{}
	for _, t := range tokens {
		at[t.Pos] = t.Term
	}
	for _, t := range tokens {
		if t.Term != phrase[0].Term {
			continue
		}
		ok := true
		for _, q := range phrase[1:] {
			if at[t.Pos+q.Pos-phrase[0].Pos] != q.Term {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
