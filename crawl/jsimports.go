package crawl

import (
	"slices"
	"strings"
)

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

// maxJSLiterals caps the URLs jsLiterals takes from one script: a script
// full of paths (a bundle's route table, a sprite list) adds at most this
// many requisites, before the per-page cap (Config.PageRequisites) on
// those with a query.
const maxJSLiterals = 64

// maxJSString bounds the length of a string literal jsLoads and
// jsLiterals read as a URL.
const maxJSString = 2 << 10

// jsRefs appends to refs the requisites a script visibly loads: its
// static imports (jsImports), the string specifiers of import() calls,
// new URL("…", import.meta.url), new Worker("…"), new SharedWorker("…")
// and importScripts("…") (jsLoads), and string literals that name a
// resource of the script's own host by its path (jsLiterals). host is
// the host (with port) of the URL the script came from; inline tells a
// <script> of a page, whose relative URLs resolve as the page's links do,
// from a script file, whose relative strings other than import() and
// new URL(…, import.meta.url) resolve against the page that runs it,
// which the crawler does not know (those are left out).
func jsRefs(js []byte, host string, inline bool, refs []ref) []ref {
	refs = jsImports(js, refs)
	refs = jsLoads(js, inline, refs)
	return jsLiterals(js, host, inline, refs)
}

// jsLoaders are the calls whose first argument, a string literal, names
// a script or resource the script loads; script tells those that resolve
// against the script's own URL (in a script file), the others resolving
// against the page's.
var jsLoaders = []struct {
	call   string
	script bool
}{
	{"import(", true},
	{"new URL(", true}, // with import.meta.url as the base: see jsLoads
	{"new Worker(", false},
	{"new SharedWorker(", false},
	{"importScripts(", false},
}

// jsLoads appends to refs, as requisites, the string specifiers of the
// loads jsLoaders lists: import("./x.js"), new URL("./x.png",
// import.meta.url) (without import.meta.url as its second argument a
// new URL names nothing loaded), new Worker("/w.js"). Specifiers must be
// URLs or paths (isURLSpecifier); in a script file, those of a Worker,
// SharedWorker or importScripts must not be relative (see jsRefs). A call
// preceded by an identifier character (reimport(, renew URL() is not one.
func jsLoads(js []byte, inline bool, refs []ref) []ref {
	s := string(js)
	for _, l := range jsLoaders {
		for i := 0; ; {
			j := strings.Index(s[i:], l.call)
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(l.call)
			if at > 0 && isIdentByte(s[at-1]) {
				continue
			}
			k := i
			for k < len(s) && isJSSpace(s[k]) {
				k++
			}
			if k == len(s) || (s[k] != '"' && s[k] != '\'' && s[k] != '`') {
				continue
			}
			spec, n := cssString(s[k:])
			if len(spec) > maxJSString || strings.ContainsAny(spec, "\n$") || !isURLSpecifier(spec) {
				continue
			}
			if l.call == "new URL(" && !strings.HasPrefix(strings.TrimLeft(s[k+n:], " \t\r\n,"), "import.meta.url") {
				continue
			}
			if !l.script && !inline && (strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../")) {
				continue
			}
			refs = append(refs, ref{spec, true})
			i = k + n
		}
	}
	return refs
}

// resourceExts are the file extensions that make a string literal in a
// script a resource's path (jsLiterals): images, styles, scripts, fonts,
// media, JSON and WebAssembly — what a script builds into the page or
// fetches — not pages, which are links rather than requisites.
var resourceExts = []string{".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico", ".bmp",
	".css", ".js", ".mjs", ".woff", ".woff2", ".ttf", ".otf", ".eot",
	".mp4", ".webm", ".ogg", ".mp3", ".wav", ".json", ".wasm"}

// jsLiterals appends to refs, as requisites, at most maxJSLiterals
// quoted strings of a script that name a resource of its own site: a
// path that starts with "/" (not "//"), or an http(s) URL of host, whose
// path ends in one of resourceExts, with any query; in a page's inline
// script, also "./" and "../" paths. A string is a run of bytes without
// spaces, quotes or angle brackets between two equal quotes (or a quote
// escaped with a backslash), so that a path in markup a script writes
// ('<img src="/img/a.png">', "<img src=\"/a.png\">") counts too, and a
// template literal with a ${} substitution does not. These are the URLs
// scripts assign to img.src or write into innerHTML; an archive that
// leaves them out replays the page without them.
func jsLiterals(js []byte, host string, inline bool, refs []ref) []ref {
	s := string(js)
	n := 0
	for i := 0; i < len(s) && n < maxJSLiterals; {
		j := strings.IndexAny(s[i:], "\"'`")
		if j < 0 {
			break
		}
		q := i + j
		i = q + 1
		end := i
		for end < len(s) && end-i <= maxJSString && !isLiteralStop(s[end]) {
			end++
		}
		if end == len(s) || end == i || end-i > maxJSString {
			continue
		}
		closed := s[end] == s[q] || (s[end] == '\\' && end+1 < len(s) && s[end+1] == s[q])
		lit := s[i:end]
		if !closed || !isResourcePath(lit, host, inline) {
			continue
		}
		refs = append(refs, ref{lit, true})
		n++
		i = end + 1
	}
	return refs
}

// isLiteralStop reports whether c ends a candidate URL in jsLiterals.
func isLiteralStop(c byte) bool {
	switch c {
	case '"', '\'', '`', '\\', '<', '>', ' ', '\t', '\r', '\n', '{', '}':
		return true
	}
	return false
}

// isResourcePath reports whether lit, a string of a script, is a path or
// URL of a resource of host (see jsLiterals).
func isResourcePath(lit, host string, inline bool) bool {
	var path string
	switch {
	case strings.HasPrefix(lit, "//"):
		return false
	case strings.HasPrefix(lit, "/"), inline && (strings.HasPrefix(lit, "./") || strings.HasPrefix(lit, "../")):
		path = lit
	case strings.HasPrefix(lit, "http://"), strings.HasPrefix(lit, "https://"):
		_, rest, _ := strings.Cut(lit, "//")
		h, p, ok := strings.Cut(rest, "/")
		if !ok || host == "" || !strings.EqualFold(h, host) {
			return false
		}
		path = "/" + p
	default:
		return false
	}
	if k := strings.IndexAny(path, "?#"); k >= 0 {
		path = path[:k]
	}
	dot := strings.LastIndexByte(path, '.')
	if dot < 0 || strings.IndexByte(path[dot:], '/') >= 0 {
		return false
	}
	return slices.Contains(resourceExts, strings.ToLower(path[dot:]))
}

// isIdentByte reports whether c can continue a JavaScript identifier (or
// is part of a member access: x.import( is not a call of import).
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
