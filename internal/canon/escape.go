package canon

// byteSet is a set of bytes.
type byteSet [256]bool

// Bytes a canonical path or query holds literally; every other byte is
// percent-encoded. Both are RFC 3986 "unreserved", "sub-delims", ':' and
// '@', plus '[' and ']', which the WHATWG URL Standard (and Go's net/url)
// leave alone in paths and queries. The query also holds '/' and '?'
// literally but not the apostrophe, which the standard encodes in the
// queries of http(s) URLs.
var pathLiteral, queryLiteral = literalSets()

func literalSets() (path, query byteSet) {
	for c := 'a'; c <= 'z'; c++ {
		path[c], path[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		path[c] = true
	}
	for _, c := range []byte("-._~!$&'()*+,;=:@[]") {
		path[c] = true
	}
	query = path
	query['\''] = false
	query['/'], query['?'] = true, true
	return path, query
}

// unreserved reports whether c is an RFC 3986 unreserved character, the
// only ones whose percent escapes are decoded (RFC 3986 section 6.2.2.2).
func unreserved(c byte) bool {
	return isAlpha(c) || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// appendEscaped appends s to b percent-encoded as a canonical path segment
// or query: the escapes of unreserved characters decoded and the others
// written with upper-case hexadecimal digits, a '%' that starts no escape
// written "%25", and every byte outside literal encoded.
func appendEscaped(b []byte, s string, literal *byteSet) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		j := i
		for j < len(s) && literal[s[j]] {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			if v := unhex(s[i+1])<<4 | unhex(s[i+2]); unreserved(v) {
				b = append(b, v)
			} else {
				b = append(b, '%', upper(s[i+1]), upper(s[i+2]))
			}
			i += 2
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f'
}

// unhex returns the value of the hexadecimal digit c.
func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return (c | 0x20) - 'a' + 10
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
