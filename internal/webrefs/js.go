package webrefs

import (
	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// JSKind is what a reference found in a script is.
type JSKind uint8

const (
	// StaticImport: the specifier of import "x", import … from "x" or
	// export … from "x".
	StaticImport JSKind = iota + 1
	// DynamicImport: a call import(…); Span is its argument when that is
	// a string (else Start == End == -1), Call the bytes "import" to "(".
	DynamicImport
	// MetaURL: the string of new URL("x", import.meta.url).
	MetaURL
	// WorkerURL: the string of new Worker("x"), new SharedWorker("x") or
	// importScripts("x").
	WorkerURL
	// Literal: a run of bytes between two equal quotes inside a string
	// or template literal, without white space, quotes, angle brackets,
	// braces or backslashes (see ScanJS): a candidate resource path.
	Literal
)

// JSRef is a reference ScanJS found: Span is the specifier's text,
// without its quotes.
type JSRef struct {
	Kind JSKind
	Span Span
	Call Span // DynamicImport only
}

// maxJSString bounds the length of a specifier or literal ScanJS reports.
const maxJSString = 2 << 10

// maxImportTokens bounds how many tokens past "import" or "export" the
// scanner looks for "from".
const maxImportTokens = 512

// jsTok is a significant token (not white space or a comment) of a
// script: its type and its bytes src[start:end].
type jsTok struct {
	tt         js.TokenType
	start, end int
}

// ScanJS calls fn, in order, with the references of a script, read with
// a JavaScript lexer (tdewolff/parse/v2/js), so that strings, comments,
// regular expressions and template literals are what they are: static
// imports and re-exports, import() calls, new URL("…", import.meta.url),
// workers and importScripts, and literal candidates. A "/" starts a
// regular expression where an expression may begin (after an operator,
// a punctuator other than ")", "]" and "}", or a keyword such as return).
// On an input the lexer cannot read to the end, the references before
// the error are reported.
func ScanJS(src []byte, fn func(JSRef)) {
	toks := lexJS(src)
	for i, t := range toks {
		switch t.tt {
		case js.StringToken, js.TemplateToken, js.TemplateStartToken, js.TemplateMiddleToken, js.TemplateEndToken:
			literals(src, t, fn)
		case js.ImportToken:
			if i > 0 && toks[i-1].tt == js.DotToken {
				continue
			}
			importRef(src, toks, i, fn)
		case js.ExportToken:
			if sp, ok := fromClause(src, toks, i+1); ok {
				fn(JSRef{Kind: StaticImport, Span: sp})
			}
		case js.NewToken:
			newRef(src, toks, i, fn)
		case js.IdentifierToken:
			if string(src[t.start:t.end]) == "importScripts" && (i == 0 || toks[i-1].tt != js.DotToken) {
				if sp, ok := callString(src, toks, i+1); ok {
					fn(JSRef{Kind: WorkerURL, Span: sp})
				}
			}
		}
	}
}

// lexJS returns the significant tokens of src. Where the lexer fails
// (it panics on some inputs past an error at their end: FuzzScanJS), the
// tokens before the failure are returned.
func lexJS(src []byte) (toks []jsTok) {
	defer func() { _ = recover() }() // toks holds the tokens read so far
	// A full slice: the lexer appends a NUL to its input, which must not
	// write into the caller's array.
	l := js.NewLexer(parse.NewInputBytes(src[:len(src):len(src)]))
	prev := js.ErrorToken // no token yet: a regular expression may start
	off := 0
	for {
		tt, data := l.Next()
		if tt == js.ErrorToken {
			off += len(data) // an unexpected character or an unterminated string
			if len(data) == 0 || off >= len(src) {
				return toks // the end, or an error the lexer cannot step over
			}
			continue
		}
		if (tt == js.DivToken || tt == js.DivEqToken) && regexpMayStart(prev) {
			if tt, data = l.RegExp(); tt == js.ErrorToken {
				return toks
			}
		}
		switch tt {
		case js.WhitespaceToken, js.LineTerminatorToken, js.CommentToken, js.CommentLineTerminatorToken:
		default:
			toks = append(toks, jsTok{tt, off, off + len(data)})
			prev = tt
		}
		off += len(data)
	}
}

// regexpMayStart reports whether a "/" after a token of type prev starts
// a regular expression rather than a division.
func regexpMayStart(prev js.TokenType) bool {
	switch prev {
	case js.StringToken, js.TemplateToken, js.TemplateEndToken, js.RegExpToken, js.PrivateIdentifierToken,
		js.CloseParenToken, js.CloseBracketToken, js.CloseBraceToken,
		js.ThisToken, js.SuperToken, js.NullToken, js.TrueToken, js.FalseToken:
		return false
	}
	if js.IsNumeric(prev) || (js.IsIdentifierName(prev) && !js.IsReservedWord(prev)) {
		return false
	}
	return true
}

// importRef reports the reference of the import keyword toks[i]: a
// static import's specifier or an import( call.
func importRef(src []byte, toks []jsTok, i int, fn func(JSRef)) {
	if i+1 >= len(toks) {
		return
	}
	switch n := toks[i+1]; n.tt {
	case js.StringToken:
		if sp, ok := stringSpan(src, n); ok {
			fn(JSRef{Kind: StaticImport, Span: sp})
		}
	case js.OpenParenToken:
		r := JSRef{Kind: DynamicImport, Span: Span{-1, -1}, Call: Span{toks[i].start, n.end}}
		if sp, ok := callString(src, toks, i+1); ok {
			r.Span = sp
		}
		fn(r)
	case js.DotToken: // import.meta
	default:
		if sp, ok := fromClause(src, toks, i+1); ok {
			fn(JSRef{Kind: StaticImport, Span: sp})
		}
	}
}

// fromClause reads the bindings of an import or export from toks[i] on
// and returns the specifier after their "from": the bindings hold only
// names (any word between braces, where "default" or a keyword may be
// exported), braces, commas and "*". A keyword outside braces (an export
// of a declaration, the next statement) ends the search.
func fromClause(src []byte, toks []jsTok, i int) (Span, bool) {
	braces := 0
	for j := i; j < len(toks) && j < i+maxImportTokens; j++ {
		switch t := toks[j]; {
		case t.tt == js.FromToken && j > i && braces == 0 && j+1 < len(toks) && toks[j+1].tt == js.StringToken:
			return stringSpan(src, toks[j+1])
		case t.tt == js.OpenBraceToken:
			braces++
		case t.tt == js.CloseBraceToken:
			if braces--; braces < 0 {
				return Span{}, false
			}
		case t.tt == js.CommaToken, t.tt == js.MulToken, js.IsIdentifier(t.tt):
		case js.IsIdentifierName(t.tt) && braces > 0:
		default:
			return Span{}, false
		}
	}
	return Span{}, false
}

// newRef reports the reference of a new expression at toks[i]: new
// URL("x", import.meta.url), new Worker("x"), new SharedWorker("x").
func newRef(src []byte, toks []jsTok, i int, fn func(JSRef)) {
	if i+1 >= len(toks) || toks[i+1].tt != js.IdentifierToken {
		return
	}
	switch string(src[toks[i+1].start:toks[i+1].end]) {
	case "URL":
		sp, ok := callString(src, toks, i+2)
		if ok && isImportMetaURL(src, toks, i+5) {
			fn(JSRef{Kind: MetaURL, Span: sp})
		}
	case "Worker", "SharedWorker":
		if sp, ok := callString(src, toks, i+2); ok {
			fn(JSRef{Kind: WorkerURL, Span: sp})
		}
	}
}

// isImportMetaURL reports whether toks[i-1:] are ", import.meta.url".
func isImportMetaURL(src []byte, toks []jsTok, i int) bool {
	if i+4 >= len(toks) || toks[i-1].tt != js.CommaToken {
		return false
	}
	return toks[i].tt == js.ImportToken && toks[i+1].tt == js.DotToken && toks[i+2].tt == js.MetaToken &&
		toks[i+3].tt == js.DotToken && string(src[toks[i+4].start:toks[i+4].end]) == "url"
}

// callString returns the string that is the first argument of the call
// whose "(" is toks[i]: a string literal, or a template literal without
// substitutions, followed by ")" or ",".
func callString(src []byte, toks []jsTok, i int) (Span, bool) {
	if i+2 >= len(toks) || toks[i].tt != js.OpenParenToken {
		return Span{}, false
	}
	a, next := toks[i+1], toks[i+2].tt
	if (a.tt != js.StringToken && a.tt != js.TemplateToken) || (next != js.CloseParenToken && next != js.CommaToken) {
		return Span{}, false
	}
	return stringSpan(src, a)
}

// stringSpan returns the contents of a string or template token, when
// they are short enough to be a URL and hold no line break or "$".
func stringSpan(src []byte, t jsTok) (Span, bool) {
	if t.end-t.start < 2 || t.end-t.start-2 > maxJSString {
		return Span{}, false
	}
	sp := Span{t.start + 1, t.end - 1}
	for _, c := range src[sp.Start:sp.End] {
		if c == '\n' || c == '\r' || c == '$' {
			return Span{}, false
		}
	}
	return sp, true
}

// literals reports the literal candidates inside the string or template
// token t: each run of bytes that starts after a quote (', " or `) and
// ends at the same quote, or at a backslash before it (an escaped quote
// in markup a script writes: "<img src=\"/a.png\">"), without a byte
// isLiteralStop rejects, at most maxJSString long. The scan goes on after
// a run's closing quote, or else right after its opening quote.
func literals(src []byte, t jsTok, fn func(JSRef)) {
	s := src[t.start:t.end]
	for i := 0; i < len(s); {
		q := indexAnyQuote(s, i)
		if q < 0 {
			return
		}
		i = q + 1
		end := i
		for end < len(s) && end-i <= maxJSString && !isLiteralStop(s[end]) {
			end++
		}
		if end == len(s) || end == i || end-i > maxJSString {
			continue
		}
		if s[end] == s[q] || (s[end] == '\\' && end+1 < len(s) && s[end+1] == s[q]) {
			fn(JSRef{Kind: Literal, Span: Span{t.start + i, t.start + end}})
			i = end + 1
		}
	}
}

func indexAnyQuote(s []byte, i int) int {
	for j := i; j < len(s); j++ {
		if c := s[j]; c == '"' || c == '\'' || c == '`' {
			return j
		}
	}
	return -1
}

// isLiteralStop reports whether c ends a literal candidate.
func isLiteralStop(c byte) bool {
	switch c {
	case '"', '\'', '`', '\\', '<', '>', ' ', '\t', '\r', '\n', '{', '}':
		return true
	}
	return false
}
