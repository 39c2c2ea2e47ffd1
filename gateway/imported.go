package gateway

import (
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
)

// cdxImport is a version's import as cdxj and ndjson show it.
type cdxImport struct {
	From   string `json:"from"`             // the source file's sha256:<hex>
	Record string `json:"record,omitempty"` // the record's id in that file
	At     string `json:"at"`               // when it was imported, a CDX timestamp
}

// importedLine is the banner's account of an imported version: who
// imported it from which file, when, and who witnessed the import; never
// "fetched".
func importedLine(v archive.Version, p Provenance) string {
	im := v.Imported
	var b strings.Builder
	b.WriteString("imported")
	if v.Peer != "" {
		b.WriteString(" by " + shortPeer(v.Peer))
	}
	from := im.From
	if len(from) > len("sha256:")+12 {
		from = from[:len("sha256:")+12] + "…"
	}
	b.WriteString(" from " + from + " at " + im.At.UTC().Format(time.DateTime) + " UTC")
	if im.Record != "" {
		b.WriteString(" (record " + im.Record + ")")
	}
	if len(p.Witnesses) > 0 {
		w := p.Witnesses[0]
		b.WriteString(" · import witnessed by " + shortPeer(w.Peer) + " at " + w.Seen.UTC().Format(time.DateTime) + " UTC")
	}
	return b.String()
}
