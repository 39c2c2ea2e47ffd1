package gateway

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/herod-archive/herod/internal/webrefs"
)

// importHook is what a dynamic import( becomes, followed by the quoted
// archived URL of the importing script and a comma: a call of the replay
// script's __herodImport, or where there is none (a worker) of a
// function that imports as the page would have.
const importHook = `(globalThis.__herodImport||function(b,u,o){return o===undefined?import(u):import(u,o)})(`

// JS returns the script js, archived at rw.Base, with the URLs of its
// static module imports and re-exports rewritten into the archive when
// they would leave it (absolute, protocol-relative and root-relative
// specifiers; a relative one already resolves inside the archive, a bare
// one is the page's import map's) and every dynamic import( routed
// through the replay script, which resolves its specifier against the
// script's archived URL at run time. webrefs.ScanJS finds both, with a
// JavaScript lexer: an import in a string, a comment or a regular
// expression is left alone. All other bytes are kept.
func (rw *Rewriter) JS(js []byte) []byte {
	if rw.identity || (!bytes.Contains(js, []byte("import")) && !bytes.Contains(js, []byte("export"))) {
		return js
	}
	var out []byte
	last := 0
	var hook []byte
	webrefs.ScanJS(js, func(r webrefs.JSRef) {
		var from, to int
		var repl []byte
		switch r.Kind {
		case webrefs.StaticImport:
			spec := string(js[r.Span.Start:r.Span.End])
			if !leavesArchive(spec) {
				return
			}
			from, to, repl = r.Span.Start, r.Span.End, []byte(rw.URL(spec, ""))
		case webrefs.DynamicImport:
			if hook == nil {
				base, err := json.Marshal(rw.Base.String())
				if err != nil {
					return
				}
				hook = []byte(importHook + string(base) + ",")
			}
			from, to, repl = r.Call.Start, r.Call.End, hook
		default:
			return
		}
		if out == nil {
			out = make([]byte, 0, len(js)+256)
		}
		out = append(out, js[last:from]...)
		out = append(out, repl...)
		last = to
	})
	if out == nil {
		return js
	}
	return append(out, js[last:]...)
}

// leavesArchive reports whether a module specifier, resolved by the
// browser against a script under /web/<ts>/, would leave the archived
// site: an absolute or protocol-relative URL, or a root-relative path.
func leavesArchive(spec string) bool {
	s := strings.TrimSpace(spec)
	low := strings.ToLower(s)
	return strings.HasPrefix(low, "http://") || strings.HasPrefix(low, "https://") || strings.HasPrefix(s, "/")
}

// scriptMedia are the media types of scripts JS rewrites.
var scriptMedia = map[string]bool{
	"text/javascript": true, "application/javascript": true, "application/x-javascript": true,
	"text/ecmascript": true, "application/ecmascript": true, "text/x-javascript": true,
	"module": true, // the type attribute of <script type=module>
}

// isScript reports whether mt, a media type or a <script type> value, is
// JavaScript.
func isScript(mt string) bool {
	return mt == "" || scriptMedia[strings.ToLower(strings.TrimSpace(mt))]
}
