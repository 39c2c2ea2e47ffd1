package crawl

import "strings"

// jsImports appends to refs, as requisites, the module specifiers of a
// script's static imports and re-exports: import "x"; import a from "x";
// import {a, b} from "x"; import * as m from "x"; export {a} from "x";
// export * from "x". Only specifiers that are URLs or relative paths
// ("/", "./", "../", "http:", "https:") are kept: a bare specifier
// ("lodash") names a package an import map resolves, not a URL. It is a
// scanner, not a parser: comments are skipped, and an "import" or
// "export" word counts only at the start of a statement (after a line
// break, ';', '{' or '}'), so import() calls, strings and identifiers
// such as reimport are not read as imports.
func jsImports(js []byte, refs []ref) []ref {
	s := string(js)
	quote := nextIndex{s: s, chars: "\"'"}
	semi := nextIndex{s: s, chars: ";"}
	stmtStart := true
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case strings.HasPrefix(s[i:], "//"):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				return refs
			}
			i += end
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return refs
			}
			i += end + 4
		case c == '\n' || c == ';' || c == '{' || c == '}':
			stmtStart = true
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case stmtStart && (hasWord(s[i:], "import") || hasWord(s[i:], "export")):
			spec, next := jsSpecifier(s, i+6, &quote, &semi)
			if isURLSpecifier(spec) {
				refs = append(refs, ref{spec, true})
			}
			i = next
			stmtStart = false
		default:
			stmtStart = false
			i++
		}
	}
	return refs
}

// maxImportStmt bounds how far past "import" or "export" jsSpecifier
// looks for the specifier.
const maxImportStmt = 4 << 10

// nextIndex finds the next of some bytes in s at or after a position,
// remembering the last answer: positions asked for only grow, so the
// scans of a whole script add up to one pass.
type nextIndex struct {
	s     string
	chars string
	at    int // the last answer (len(s): none), when valid
	valid bool
}

// from returns the index of the first of chars at or after pos, or len(s).
func (n *nextIndex) from(pos int) int {
	if n.valid && n.at >= pos {
		return n.at
	}
	n.valid = true
	if j := strings.IndexAny(n.s[pos:], n.chars); j >= 0 {
		n.at = pos + j
	} else {
		n.at = len(n.s)
	}
	return n.at
}

// jsSpecifier reads the statement whose "import" or "export" word ends
// at i and returns its module specifier, if any, and where the scan goes
// on: the string right after "import", or the statement's first string
// when "from" precedes it, within maxImportStmt bytes and before any
// ';'. An import( call, import.meta, an export of a declaration, or a
// statement without a specifier has none, and the scan goes on at i.
func jsSpecifier(s string, i int, quote, semi *nextIndex) (string, int) {
	j := i
	for j < len(s) && isJSSpace(s[j]) {
		j++
	}
	if j == len(s) {
		return "", i
	}
	if s[j] == '"' || s[j] == '\'' {
		spec, n := cssString(s[j:])
		return spec, j + n
	}
	if s[j] == '(' || s[j] == '.' {
		return "", i
	}
	q := quote.from(j)
	if q == len(s) || q-i > maxImportStmt || semi.from(j) < q {
		return "", i
	}
	clause := strings.TrimRight(s[j:q], " \t\r\n")
	if !strings.HasSuffix(clause, "from") {
		return "", i
	}
	if k := len(clause) - 4; k > 0 && !isJSSpace(clause[k-1]) && clause[k-1] != '}' && clause[k-1] != '*' {
		return "", i
	}
	spec, n := cssString(s[q:])
	return spec, q + n
}

func isJSSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// isURLSpecifier reports whether a module specifier is a URL or a path
// relative to the script rather than a bare package name.
func isURLSpecifier(spec string) bool {
	for _, p := range []string{"/", "./", "../", "http://", "https://"} {
		if strings.HasPrefix(spec, p) {
			return true
		}
	}
	return false
}

// hasWord reports whether s starts with word followed by a character that
// cannot continue an identifier.
func hasWord(s, word string) bool {
	if !strings.HasPrefix(s, word) {
		return false
	}
	if len(s) == len(word) {
		return true
	}
	c := s[len(word)]
	return !(c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80)
}
