package exchange

import (
	"fmt"
	"io"
	"strings"

	"github.com/herod-archive/herod/archive"
)

// Index builds the CDXJ index of a WARC file as its records are written,
// in the form archive.Store.Export writes (pywb's and warcio's fields:
// url, mime, status, digest, length, offset, filename): herod export
// indexes a ring-wide stream with it as it saves the stream. Lines are
// held until WriteTo sorts them (about 200 bytes per record).
type Index struct {
	Filename string // the WARC file's name, for every line
	lines    []archive.CDXJLine
}

// Add indexes m, a response or revisit record written at offset off of
// the file; other records are not indexed.
func (x *Index) Add(m *Member, off int64) error {
	typ := m.Type()
	if typ != "response" && typ != "revisit" {
		return nil
	}
	status, h, _, err := m.HTTP()
	if err != nil {
		return err
	}
	e := archive.CDXJLine{SURT: archive.Surt(m.URL()), TS: timestamp14(m.Time()), URL: m.URL(), Mime: MediaType(h.Get("Content-Type")),
		Status: itoa(status), Digest: strings.TrimPrefix(m.Record.Header.Get("Warc-Payload-Digest"), "sha1:"),
		Length: itoa(len(m.Raw)), Offset: fmt.Sprint(off), Filename: x.Filename}
	if typ == "revisit" {
		e.Mime = revisitMime
	}
	if m.Record.Header.Get(archive.HeaderBrowser) == "1" {
		e.Browser = "1"
	}
	x.lines = append(x.lines, e)
	return nil
}

// Len returns the lines indexed.
func (x *Index) Len() int { return len(x.lines) }

// WriteTo writes the index as the store's export does (archive.WriteCDXJ):
// sorted by SURT then timestamp, "<surt> <timestamp> <json>" lines.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	n, err := archive.WriteCDXJ(w, x.lines)
	if err != nil {
		return n, fmt.Errorf("exchange index: %w", err)
	}
	return n, nil
}
