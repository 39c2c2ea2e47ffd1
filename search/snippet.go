package search

import (
	"html"
	"strings"
)

// snippetTokens is the width of a snippet in tokens.
const snippetTokens = 30

// Snippet returns an HTML fragment of text around the densest run of the
// query's terms, each occurrence marked <mark>…</mark>; everything else
// is escaped. tokens are text's tokens (Analyze(text)).
func Snippet(text string, tokens []Token, terms []string) string {
	want := map[string]bool{}
	for _, t := range terms {
		want[t] = true
	}
	best, bestN := 0, -1
	for i := range tokens {
		if !want[tokens[i].Term] {
			continue
		}
		start := max(0, i-5)
		seen := map[string]bool{}
		for j := start; j < len(tokens) && j < start+snippetTokens; j++ {
			if want[tokens[j].Term] {
				seen[tokens[j].Term] = true
			}
		}
		if len(seen) > bestN {
			best, bestN = start, len(seen)
		}
	}
	if len(tokens) == 0 {
		return html.EscapeString(cut(text, 240))
	}
	end := min(len(tokens), best+snippetTokens)
	from := tokens[best].Start
	if best == 0 {
		from = 0
	}
	to := tokens[end-1].End
	var b strings.Builder
	if from > 0 {
		b.WriteString("… ")
	}
	pos := from
	for _, t := range tokens[best:end] {
		if !want[t.Term] {
			continue
		}
		b.WriteString(html.EscapeString(text[pos:t.Start]))
		b.WriteString("<mark>")
		b.WriteString(html.EscapeString(text[t.Start:t.End]))
		b.WriteString("</mark>")
		pos = t.End
	}
	b.WriteString(html.EscapeString(text[pos:to]))
	if to < len(text) {
		b.WriteString(" …")
	}
	return b.String()
}

// cut returns at most n bytes of s, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
