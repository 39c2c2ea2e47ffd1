package gateway

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// staticImport matches the specifier of a static module import or
// re-export: `import "x"`, `import a, {b as c} from "x"`, `export * from
// "x"`. The bindings between the keyword and from are limited to what they
// can hold (names, braces, commas, "*", white space), so that text in
// strings and comments rarely matches. Go's regexp runs in linear time.
var staticImport = regexp.MustCompile(`\b(?:import|export)\s*(?:[\w$*{}\s,]*?\bfrom\s*)?(?:"([^"\n]*)"|'([^'\n]*)')`)

// dynamicImport matches a dynamic import( that is not a property
// (obj.import() or part of a longer name.
var dynamicImport = regexp.MustCompile(`(?:^|[^\w$.])import\s*\(`)

// importHook is what a dynamic import( becomes, followed by the quoted
// archived URL of the importing script and a comma: a call of the replay
// script's __herodImport, or where there is none (a worker) of a
// function that imports as the page would have.
const importHook = `(globalThis.__herodImport||function(b,u,o){return o===undefined?import(u):import(u,o)})(`

// JS returns the script js, archived at rw.Base, with the URLs of its
// static module imports rewritten into the archive when they would leave
// it (absolute, protocol-relative and root-relative specifiers; a
// relative one already resolves inside the archive, a bare one is the
// page's import map's) and every dynamic import( routed through the replay
// script, which resolves its specifier against the script's archived URL
// at run time. All other bytes are kept.
func (rw *Rewriter) JS(js []byte) []byte {
	if rw.identity || (!bytes.Contains(js, []byte("import")) && !bytes.Contains(js, []byte("export"))) {
		return js
	}
	out := make([]byte, 0, len(js)+256)
	last := 0
	for _, m := range staticImport.FindAllSubmatchIndex(js, -1) {
		for g := 1; g <= 2; g++ {
			s, e := m[2*g], m[2*g+1]
			if s < 0 {
				continue
			}
			spec := string(js[s:e])
			if leavesArchive(spec) {
				out = append(out, js[last:s]...)
				out = append(out, rw.URL(spec, "")...)
				last = e
			}
			break
		}
	}
	out = append(out, js[last:]...)
	if !dynamicImport.Match(out) {
		return out
	}
	base, err := json.Marshal(rw.Base.String())
	if err != nil {
		return out
	}
	hook := importHook + string(base) + ","
	return dynamicImport.ReplaceAllFunc(out, func(m []byte) []byte {
		i := bytes.Index(m, []byte("import"))
		return append(append([]byte(nil), m[:i]...), hook...)
	})
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
