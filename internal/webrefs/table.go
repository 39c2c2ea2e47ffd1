package webrefs

import (
	"encoding/json"
	"mime"
	"slices"
	"strings"
)

// Kind is what an attribute's value holds.
type Kind uint8

const (
	// None: no URL.
	None Kind = iota
	// URL: one URL.
	URL
	// FrameURL: one URL, of a document shown in a frame.
	FrameURL
	// Srcset: a list of image candidates (canon.SrcsetURLs splits it).
	Srcset
	// Style: CSS declarations (CSS scans them).
	Style
	// Refresh: a <meta> content value, when the element's http-equiv is
	// refresh (RefreshURL finds the URL).
	Refresh
	// Integrity: no URL, but a hash of the resource the element loads,
	// which a rewritten resource no longer matches.
	Integrity
)

var kindNames = [...]string{"none", "url", "frame", "srcset", "style", "refresh", "integrity"}

// String returns the kind's name, as the table's JSON writes it.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Use is what a browser does with the URL of an attribute.
type Use uint8

const (
	// Unfetched: the browser loads nothing by it until the reader acts
	// (a form's action), or the element is not one that loads its src.
	// Replay rewrites it; the crawler does not fetch it.
	Unfetched Use = iota
	// Embed: a page requisite, loaded to display the page.
	Embed
	// Follow: a link the reader follows.
	Follow
	// ByRel: a <link href>, a requisite when its rel says so (EmbedRel),
	// else a link.
	ByRel
)

var useNames = [...]string{"unfetched", "embed", "follow", "rel"}

// String returns the use's name, as the table's JSON writes it.
func (u Use) String() string {
	if int(u) < len(useNames) {
		return useNames[u]
	}
	return "invalid"
}

// Attr is one row of the attribute table.
type Attr struct {
	Tag  string // lower-case element name; "*" for any element
	Name string // lower-case attribute name
	Kind Kind
	Use  Use
}

// table is where URLs live in HTML. A row for an element wins over the
// row for "*"; an attribute with neither holds no URL. Only the first
// occurrence of an attribute in a tag counts: it is the one browsers use.
var table = []Attr{
	{"*", "href", URL, Unfetched},
	{"*", "xlink:href", URL, Unfetched},
	{"*", "src", URL, Unfetched},
	{"*", "srcset", Srcset, Unfetched},
	{"*", "imagesrcset", Srcset, Unfetched},
	{"*", "action", URL, Unfetched},
	{"*", "formaction", URL, Unfetched},
	{"*", "background", URL, Unfetched},
	{"*", "poster", URL, Unfetched},
	{"*", "style", Style, Embed},
	{"a", "href", URL, Follow},
	{"area", "href", URL, Follow},
	{"link", "href", URL, ByRel},
	{"img", "src", URL, Embed},
	{"img", "srcset", Srcset, Embed},
	{"script", "src", URL, Embed},
	{"iframe", "src", FrameURL, Embed},
	{"frame", "src", FrameURL, Embed},
	{"embed", "src", URL, Embed},
	{"source", "src", URL, Embed},
	{"source", "srcset", Srcset, Embed},
	{"video", "src", URL, Embed},
	{"video", "poster", URL, Embed},
	{"audio", "src", URL, Embed},
	{"track", "src", URL, Embed},
	{"input", "src", URL, Embed},
	{"object", "data", URL, Embed},
	{"form", "action", URL, Unfetched},
	{"body", "background", URL, Embed},
	{"table", "background", URL, Embed},
	{"td", "background", URL, Embed},
	{"meta", "content", Refresh, Follow},
	{"link", "integrity", Integrity, Unfetched},
	{"script", "integrity", Integrity, Unfetched},
}

type attrKey struct{ tag, name string }

var index = func() map[attrKey]Attr {
	m := make(map[attrKey]Attr, len(table))
	for _, a := range table {
		m[attrKey{a.Tag, a.Name}] = a
	}
	return m
}()

// Lookup returns the row of the table for attribute name of element tag
// (both lower case): the element's own row, else the row for "*", else
// an Attr of Kind None.
func Lookup(tag, name string) Attr {
	if a, ok := index[attrKey{tag, name}]; ok {
		return a
	}
	if a, ok := index[attrKey{"*", name}]; ok {
		return a
	}
	return Attr{Tag: tag, Name: name}
}

// Table returns a copy of the attribute table.
func Table() []Attr { return slices.Clone(table) }

// embedRels are the <link rel> values whose target the page loads to
// display itself; a <link> with none of them is navigation (alternate,
// canonical, next, author…).
var embedRels = []string{"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed",
	"mask-icon", "fluid-icon", "preload", "modulepreload", "manifest"}

// EmbedRel reports whether a <link>'s rel attribute names a requisite.
func EmbedRel(rel string) bool {
	for _, r := range strings.Fields(strings.ToLower(rel)) {
		if slices.Contains(embedRels, r) {
			return true
		}
	}
	return false
}

// jsTypes are the media types of JavaScript (and "module", the type of a
// module <script>).
var jsTypes = []string{"text/javascript", "application/javascript", "application/x-javascript",
	"application/ecmascript", "text/ecmascript", "text/x-javascript", "module"}

// IsScriptType reports whether a <script>'s type attribute makes it
// JavaScript that runs (classic or a module) rather than a data block.
func IsScriptType(typ string) bool {
	typ = strings.ToLower(strings.TrimSpace(typ))
	if typ == "" {
		return true
	}
	if mt, _, err := mime.ParseMediaType(typ); err == nil {
		typ = mt
	} else {
		typ, _, _ = strings.Cut(typ, ";")
		typ = strings.TrimSpace(typ)
	}
	return slices.Contains(jsTypes, typ)
}

// jsonAttr is a row of the table as JSON writes it.
type jsonAttr struct {
	Tag  string `json:"tag"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	Use  string `json:"use"`
}

// TableJSON returns the attribute table as a JSON array of objects
// {"tag", "name", "kind", "use"} (kinds and uses by their String names),
// in table order: what the gateway gives replay.js.
func TableJSON() []byte {
	rows := make([]jsonAttr, len(table))
	for i, a := range table {
		rows[i] = jsonAttr{a.Tag, a.Name, a.Kind.String(), a.Use.String()}
	}
	b, err := json.Marshal(rows)
	if err != nil {
		panic("webrefs: table does not marshal: " + err.Error())
	}
	return b
}
