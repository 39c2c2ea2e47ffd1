package exchange

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
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
	lines    []cdxjEntry
}

// cdxjEntry is one line, its sort key apart.
type cdxjEntry struct {
	surt, ts string
	URL      string `json:"url"`
	Mime     string `json:"mime,omitempty"`
	Status   string `json:"status"`
	Digest   string `json:"digest"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
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
	e := cdxjEntry{surt: archive.Surt(m.URL()), ts: timestamp14(m.Time()), URL: m.URL(), Mime: MediaType(h.Get("Content-Type")),
		Status: itoa(status), Digest: strings.TrimPrefix(m.Record.Header.Get("Warc-Payload-Digest"), "sha1:"),
		Length: itoa(len(m.Raw)), Offset: fmt.Sprint(off), Filename: x.Filename}
	if typ == "revisit" {
		e.Mime = revisitMime
	}
	x.lines = append(x.lines, e)
	return nil
}

// Len returns the lines indexed.
func (x *Index) Len() int { return len(x.lines) }

// WriteTo writes the index, sorted by SURT then timestamp, as
// "<surt> <timestamp> <json>" lines.
func (x *Index) WriteTo(w io.Writer) (int64, error) {
	slices.SortStableFunc(x.lines, func(a, b cdxjEntry) int {
		return cmp.Or(strings.Compare(a.surt, b.surt), strings.Compare(a.ts, b.ts))
	})
	var n int64
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, l := range x.lines {
		b.Reset()
		b.WriteString(l.surt + " " + l.ts + " ")
		if err := enc.Encode(l); err != nil { // Encode ends the line
			return n, fmt.Errorf("exchange index: %w", err)
		}
		k, err := w.Write(b.Bytes())
		n += int64(k)
		if err != nil {
			return n, fmt.Errorf("exchange index: %w", err)
		}
	}
	return n, nil
}
