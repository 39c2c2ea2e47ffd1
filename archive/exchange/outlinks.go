package exchange

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Outlink metadata: a WARC export asked for it (ExportOptions.Outlinks,
// /export?outlinks=1, herod export --outlinks) carries, right after each
// HTML response record, a metadata record (WARC 1.1 section 6.7) about
// it: WARC-Concurrent-To names the response's record, the block is
// application/warc-fields with one "outlink: <url>" line per distinct
// canonical link of the page (ParseHTML's, as the links export lists
// them; Heritrix writes the same field name). Its record id is derived
// from the response's, so exporting the same response again writes the
// same metadata record, byte for byte.

// OutlinkStats counts what WithOutlinks wrote.
type OutlinkStats struct {
	Records  int // records copied
	Metadata int // metadata records added
	Links    int // outlink lines in them
}

// WithOutlinks copies the .warc.gz stream r to w, adding after each HTML
// response record its metadata record of outlinks (none for a page
// without links). progress, if non-nil, is called with each response or
// revisit record's member after it, and its metadata record, are
// written: the exact cursor to resume after both.
func WithOutlinks(r io.Reader, w io.Writer, progress func(*Member)) (OutlinkStats, error) {
	var st OutlinkStats
	bw := bufio.NewWriterSize(w, 64<<10)
	err := Records(r, func(m *Member) error {
		if _, err := bw.Write(m.Raw); err != nil {
			return err
		}
		st.Records++
		if m.Type() == "response" {
			_, h, payload, err := m.HTTP()
			if err != nil {
				return err
			}
			if IsHTML(MediaType(h.Get("Content-Type"))) {
				links := ParseHTML(m.URL(), payload).Links
				if len(links) > 0 {
					if err := writeOutlinks(bw, m, links); err != nil {
						return err
					}
					st.Metadata++
					st.Links += len(links)
				}
			}
		}
		if progress != nil && (m.Type() == "response" || m.Type() == "revisit") {
			if err := bw.Flush(); err != nil {
				return err
			}
			progress(m)
		}
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return st, fmt.Errorf("exchange outlinks: %w", err)
	}
	return st, nil
}

// OutlinksOf reads a metadata record's block (application/warc-fields)
// and returns its outlinks, in order.
func OutlinksOf(block []byte) []string {
	var out []string
	for _, line := range strings.Split(string(block), "\r\n") {
		if v, ok := strings.CutPrefix(line, "outlink: "); ok {
			out = append(out, v)
		}
	}
	return out
}

// writeOutlinks writes the metadata record of response m's links, in
// its own gzip member.
func writeOutlinks(w io.Writer, m *Member, links []string) error {
	var block bytes.Buffer
	for _, l := range links {
		fmt.Fprintf(&block, "outlink: %s\r\n", strings.NewReplacer("\r", "%0D", "\n", "%0A").Replace(l))
	}
	respID := m.Record.Header.Get("Warc-Record-Id")
	sum := sha1.Sum([]byte("herod outlinks of " + respID))
	sum[6] = sum[6]&0x0f | 0x50 // a name-based (SHA-1) UUID, version 5
	sum[8] = sum[8]&0x3f | 0x80
	digest := sha1.Sum(block.Bytes())
	var rec bytes.Buffer
	rec.WriteString("WARC/1.1\r\nWARC-Type: metadata\r\n")
	fmt.Fprintf(&rec, "WARC-Record-ID: <urn:uuid:%x-%x-%x-%x-%x>\r\n", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	fmt.Fprintf(&rec, "WARC-Target-URI: %s\r\n", m.URL())
	fmt.Fprintf(&rec, "WARC-Date: %s\r\n", m.Record.Header.Get("Warc-Date"))
	if respID != "" {
		fmt.Fprintf(&rec, "WARC-Concurrent-To: %s\r\n", respID)
	}
	fmt.Fprintf(&rec, "WARC-Block-Digest: sha1:%s\r\n", base32.StdEncoding.EncodeToString(digest[:]))
	fmt.Fprintf(&rec, "Content-Type: application/warc-fields\r\nContent-Length: %d\r\n\r\n", block.Len())
	rec.Write(block.Bytes())
	rec.WriteString("\r\n\r\n")
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(rec.Bytes()); err != nil {
		return err
	}
	return zw.Close()
}
