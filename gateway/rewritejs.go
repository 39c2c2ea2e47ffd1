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
// expression is left alone. Unless rw.Worker, the script's references to
// the document's location (webrefs.ScanLocation) are renamed
// locationName, the replay script's stand-in that reads and moves the
// archived URL (a client-side router reading location.pathname then
// finds its route, not the archive's path). All other bytes are kept.
func (rw *Rewriter) JS(js []byte) []byte {
	if rw.identity {
		return js
	}
	var edits []jsEdit
	if bytes.Contains(js, []byte("import")) || bytes.Contains(js, []byte("export")) {
		edits = rw.importEdits(js)
	}
	if !rw.Worker && bytes.Contains(js, []byte("location")) {
		var locs []jsEdit
		webrefs.ScanLocation(js, func(sp webrefs.Span) {
			locs = append(locs, jsEdit{sp.Start, sp.End, []byte(locationName)})
		})
		edits = mergeEdits(edits, locs)
	}
	if len(edits) == 0 {
		return js
	}
	out := make([]byte, 0, len(js)+256)
	last := 0
	for _, e := range edits {
		out = append(out, js[last:e.from]...)
		out = append(out, e.repl...)
		last = e.to
	}
	return append(out, js[last:]...)
}

// locationName is what JS renames a script's location to: the replay
// script's stand-in for it (replay.js).
const locationName = "__herodLocation"

// jsEdit replaces js[from:to] with repl.
type jsEdit struct {
	from, to int
	repl     []byte
}

// mergeEdits merges two lists of edits in order of position; an edit
// overlapping one already taken is dropped.
func mergeEdits(a, b []jsEdit) []jsEdit {
	if len(a) == 0 {
		return b
	}
	out := make([]jsEdit, 0, len(a)+len(b))
	i, j, end := 0, 0, 0
	for i < len(a) || j < len(b) {
		var e jsEdit
		if j >= len(b) || (i < len(a) && a[i].from <= b[j].from) {
			e, i = a[i], i+1
		} else {
			e, j = b[j], j+1
		}
		if e.from >= end {
			out = append(out, e)
			end = e.to
		}
	}
	return out
}

// importEdits returns the edits of js's imports (see JS).
func (rw *Rewriter) importEdits(js []byte) []jsEdit {
	var edits []jsEdit
	var hook []byte
	mod := "" // a worker's imports are the worker's too
	if rw.Worker {
		mod = ModWorker
	}
	webrefs.ScanJS(js, func(r webrefs.JSRef) {
		switch r.Kind {
		case webrefs.StaticImport:
			spec := string(js[r.Span.Start:r.Span.End])
			if !leavesArchive(spec) {
				return
			}
			edits = append(edits, jsEdit{r.Span.Start, r.Span.End, []byte(rw.URL(spec, mod))})
		case webrefs.DynamicImport:
			if hook == nil {
				base, err := json.Marshal(rw.Base.String())
				if err != nil {
					return
				}
				hook = []byte(importHook + string(base) + ",")
			}
			edits = append(edits, jsEdit{r.Call.Start, r.Call.End, hook})
		}
	})
	return edits
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
