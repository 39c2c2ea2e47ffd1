package webrefs

import "bytes"

// Span is the position of a URL in the text it was found in: text[Start:End].
type Span struct{ Start, End int }

// CSS calls fn with the span of each URL in CSS text, in order: the
// targets of url(…) (quoted or not), @import "…" and the strings of
// image-set(…) (and -webkit-image-set). It is a scanner, not a parser:
// comments are skipped, strings outside those are skipped (a url( in a
// content string names nothing), escapes are not decoded, and an empty
// URL or an unquoted one with white space, a quote or a parenthesis in it
// (a bad url token) is not reported.
func CSS(css []byte, fn func(Span)) {
	imageSet := 0 // parentheses open inside an image-set(
	for i := 0; i < len(css); {
		c := css[i]
		switch {
		case c == '/' && i+1 < len(css) && css[i+1] == '*':
			end := indexFrom(css, i+2, "*/")
			if end < 0 {
				return
			}
			i = end + 2
		case c == '"' || c == '\'':
			sp, n, ok := cssString(css, i)
			if ok && imageSet > 0 && sp.End > sp.Start {
				fn(sp)
			}
			i = n
		case (c == 'u' || c == 'U') && hasPrefixFold(css[i:], "url("):
			i = cssURL(css, i+4, fn)
		case c == '@' && hasPrefixFold(css[i:], "@import"):
			i = cssImport(css, i+len("@import"), fn)
		case (c == 'i' || c == 'I' || c == '-') && imageSetAt(css, i):
			imageSet++
			i = indexFrom(css, i, "(") + 1
		case c == '(' && imageSet > 0:
			imageSet++
			i++
		case c == ')' && imageSet > 0:
			imageSet--
			i++
		default:
			i++
		}
	}
}

// cssImport reads what follows an @import at css[i], reports its URL
// when it is a string, and returns where the scan goes on.
func cssImport(css []byte, i int, fn func(Span)) int {
	n, _ := cssQuoted(css, i, fn)
	return n
}

// cssQuoted skips spaces from css[i] and, if a string follows, reports
// its contents (when not empty) to fn; it returns where the scan goes on
// and whether there was a string.
func cssQuoted(css []byte, i int, fn func(Span)) (int, bool) {
	for i < len(css) && isCSSSpace(css[i]) {
		i++
	}
	if i >= len(css) || (css[i] != '"' && css[i] != '\'') {
		return i, false
	}
	sp, n, ok := cssString(css, i)
	if ok && sp.End > sp.Start {
		fn(sp)
	}
	return n, true
}

// imageSetAt reports whether an image-set( or -webkit-image-set( starts
// at css[i].
func imageSetAt(css []byte, i int) bool {
	return hasPrefixFold(css[i:], "image-set(") || hasPrefixFold(css[i:], "-webkit-image-set(")
}

// cssURL reads the inside of a url( whose contents start at css[i],
// reports its URL to fn and returns where the scan goes on: after the
// closing parenthesis.
func cssURL(css []byte, i int, fn func(Span)) int {
	n, quoted := cssQuoted(css, i, fn)
	if quoted {
		if end := indexFrom(css, n, ")"); end >= 0 {
			return end + 1
		}
		return len(css)
	}
	i = n
	end := indexFrom(css, i, ")")
	if end < 0 {
		end = len(css)
	}
	e := end
	for e > i && isCSSSpace(css[e-1]) {
		e--
	}
	bad := false
	for _, c := range css[i:e] {
		if isCSSSpace(c) || c == '"' || c == '\'' || c == '(' {
			bad = true
			break
		}
	}
	if !bad && e > i {
		fn(Span{i, e})
	}
	return min(end+1, len(css))
}

// cssString reads the quoted string starting at css[i] and returns the
// span of its contents, where the scan goes on (after the closing quote)
// and whether it is a string: a backslash escapes the next byte, and a
// line break before the closing quote makes a bad string (not reported).
// A string that runs to the end of the text ends there.
func cssString(css []byte, i int) (Span, int, bool) {
	q := css[i]
	for j := i + 1; j < len(css); j++ {
		switch css[j] {
		case q:
			return Span{i + 1, j}, j + 1, true
		case '\\':
			j++
		case '\n', '\r', '\f':
			return Span{}, j, false
		}
	}
	return Span{i + 1, len(css)}, len(css), true
}

// indexFrom returns the index of sub in b at or after i, or -1.
func indexFrom(b []byte, i int, sub string) int {
	if i > len(b) {
		return -1
	}
	if k := bytes.Index(b[i:], []byte(sub)); k >= 0 {
		return i + k
	}
	return -1
}

func hasPrefixFold(b []byte, prefix string) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

func isCSSSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}
