package webrefs

import (
	"github.com/tdewolff/parse/v2/js"
)

// ScanLocation calls fn, in order, with the spans of a script (read as
// ScanJS reads it) that name the document's location: the identifier
// location where it is not a property name (x.location, an object key
// {location: …}), and window.location, self.location,
// globalThis.location and document.location whole. A replay renames
// them so that the script reads the archived URL, not the archive's own
// address. A local variable named location is renamed with every use of
// it in the script, which keeps its meaning.
func ScanLocation(src []byte, fn func(Span)) {
	toks := lexJS(src)
	for i, t := range toks {
		if t.tt != js.IdentifierToken || string(src[t.start:t.end]) != "location" {
			continue
		}
		var prev, next js.TokenType = js.ErrorToken, js.ErrorToken
		if i > 0 {
			prev = toks[i-1].tt
		}
		if i+1 < len(toks) {
			next = toks[i+1].tt
		}
		switch {
		case prev == js.DotToken:
			if i < 2 {
				continue
			}
			owner := toks[i-2]
			switch string(src[owner.start:owner.end]) {
			case "window", "self", "globalThis", "document":
				if i < 3 || toks[i-3].tt != js.DotToken && toks[i-3].tt != js.OptChainToken {
					fn(Span{owner.start, t.end})
				}
			}
		case prev == js.OptChainToken:
		case next == js.ColonToken && (prev == js.OpenBraceToken || prev == js.CommaToken):
			// An object literal's key (or a label after a brace).
		case prev == js.GetToken || prev == js.SetToken || prev == js.StaticToken || prev == js.AsyncToken:
			// A getter, setter or method named location.
		default:
			fn(Span{t.start, t.end})
		}
	}
}
