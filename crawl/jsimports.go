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
			spec, n := jsSpecifier(s[i+6:])
			if isURLSpecifier(spec) {
				refs = append(refs, ref{spec, true})
			}
			i += 6 + n
			stmtStart = false
		default:
			stmtStart = false
			i++
		}
	}
	return refs
}

// jsSpecifier reads what follows "import" or "export" and returns the
// module specifier, if any, and the bytes consumed: the string right
// after "import", or the string after the statement's first "from"
// (before any ';'), the string included. An import( call, import.meta or
// an export of a declaration has none, and consumes nothing.
func jsSpecifier(s string) (string, int) {
	t := strings.TrimLeft(s, " \t\r\n")
	skipped := len(s) - len(t)
	if t == "" {
		return "", 0
	}
	if t[0] == '"' || t[0] == '\'' {
		spec, n := cssString(t)
		return spec, skipped + n
	}
	if t[0] == '(' || t[0] == '.' {
		return "", 0
	}
	end := len(s)
	if j := strings.IndexByte(s, ';'); j >= 0 {
		end = j
	}
	for k := 0; k < end; {
		i := strings.Index(s[k:end], "from")
		if i < 0 {
			return "", 0
		}
		k += i
		if k > 0 && !isJSSpace(s[k-1]) && s[k-1] != '}' && s[k-1] != '*' {
			k += 4
			continue
		}
		rest := strings.TrimLeft(s[k+4:end], " \t\r\n")
		if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
			spec, n := cssString(rest)
			return spec, end - len(rest) + n
		}
		k += 4
	}
	return "", 0
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
