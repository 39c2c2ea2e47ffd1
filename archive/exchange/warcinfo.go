package exchange

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

// WARCInfo describes a WARC file in its first record, a warcinfo record
// (WARC 1.1 section 6.4; fields after the IIPC's recommendations).
type WARCInfo struct {
	// Filename is the WARC file's name (WARC-Filename), "" when unknown.
	Filename string
	// Software names the program and its version: "herod (devel)".
	Software string
	// Operator is who made the file: a contact URL or e-mail, "" if none
	// was given.
	Operator string
	// IsPartOf names the collection the file belongs to: "herod export
	// --host example.com".
	IsPartOf string
	// Description says what the file holds, in a sentence.
	Description string
	// Date is the record's WARC-Date; zero means now.
	Date time.Time
}

// warcFields is the record's application/warc-fields block.
func (in WARCInfo) warcFields() []byte {
	var b bytes.Buffer
	field := func(k, v string) {
		if v = strings.Join(strings.Fields(v), " "); v != "" { // one line each
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	field("software", in.Software)
	field("format", "WARC File Format 1.1")
	field("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")
	field("operator", in.Operator)
	field("isPartOf", in.IsPartOf)
	field("description", in.Description)
	return b.Bytes()
}

// WriteWARCInfo writes in as a warcinfo record in its own gzip member, as
// the first record of a .warc.gz stream, and returns the bytes written.
func WriteWARCInfo(w io.Writer, in WARCInfo) (int64, error) {
	if in.Date.IsZero() {
		in.Date = time.Now()
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return 0, fmt.Errorf("warcinfo: record id: %w", err)
	}
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	block := in.warcFields()
	var rec bytes.Buffer
	rec.WriteString("WARC/1.1\r\nWARC-Type: warcinfo\r\n")
	fmt.Fprintf(&rec, "WARC-Record-ID: <urn:uuid:%x-%x-%x-%x-%x>\r\n", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
	fmt.Fprintf(&rec, "WARC-Date: %s\r\n", in.Date.UTC().Format(time.RFC3339Nano))
	if f := strings.Join(strings.Fields(in.Filename), "_"); f != "" {
		fmt.Fprintf(&rec, "WARC-Filename: %s\r\n", f)
	}
	sum := sha1.Sum(block)
	fmt.Fprintf(&rec, "WARC-Block-Digest: sha1:%s\r\n", base32.StdEncoding.EncodeToString(sum[:]))
	fmt.Fprintf(&rec, "Content-Type: application/warc-fields\r\nContent-Length: %d\r\n\r\n", len(block))
	rec.Write(block)
	rec.WriteString("\r\n\r\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(rec.Bytes()); err != nil {
		return 0, fmt.Errorf("warcinfo: %w", err)
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("warcinfo: %w", err)
	}
	n, err := w.Write(gz.Bytes())
	if err != nil {
		return int64(n), fmt.Errorf("warcinfo: %w", err)
	}
	return int64(n), nil
}
