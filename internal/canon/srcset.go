package canon

import "bytes"

// SrcsetURLs returns the byte spans [start, end) of the candidate URLs in
// an srcset attribute value, parsed as the HTML standard parses it: a URL
// runs to the next whitespace; commas that end it also end its candidate;
// otherwise its descriptors run to the next comma outside parentheses
// (which do not nest: the first ")" closes them).
// So "data:image/png;base64,AAAA 1x, b.png 2x" has two URLs, the first of
// them with its comma.
func SrcsetURLs(v string) [][2]int {
	var spans [][2]int
	i := 0
	for i < len(v) {
		for i < len(v) && (IsHTMLSpace(v[i]) || v[i] == ',') {
			i++
		}
		if i >= len(v) {
			break
		}
		j := i
		for j < len(v) && !IsHTMLSpace(v[j]) {
			j++
		}
		k := j
		for k > i && v[k-1] == ',' {
			k--
		}
		if k > i {
			spans = append(spans, [2]int{i, k})
		}
		i = j
		if k < j {
			continue // the commas ended this candidate
		}
		inParens := false // the standard's "in parens" state: no nesting
	descriptors:
		for ; i < len(v); i++ {
			switch v[i] {
			case '(':
				inParens = true
			case ')':
				inParens = false
			case ',':
				if !inParens {
					break descriptors
				}
			}
		}
	}
	return spans
}

// MayHaveTag reports whether doc holds "<" directly followed by one of
// names (lower case), in any case: a start tag's name follows its "<", so
// a document without such a run of bytes has no such element (one in a
// comment or a script is a false positive). It runs at memchr speed, to
// decide whether a document needs a slower pass at all.
func MayHaveTag(doc []byte, names ...string) bool {
	for i := 0; ; {
		j := bytes.IndexByte(doc[i:], '<')
		if j < 0 {
			return false
		}
		i += j + 1
		for _, n := range names {
			if len(doc)-i >= len(n) && bytes.EqualFold(doc[i:i+len(n)], []byte(n)) {
				return true
			}
		}
	}
}

// IsHTMLSpace reports whether c is ASCII whitespace as HTML defines it.
func IsHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}
