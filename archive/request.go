package archive

import (
	"bytes"
	"encoding/base64"
	"io"
)

// Requests. The crawler and the browser know the HTTP request they sent
// for a capture: its request line and header fields as written, the
// conditional ones (If-None-Match, If-Modified-Since) included. A capture
// may carry that head (Capture.Request); the archive keeps it in the
// response record's WARC field WARC-Herod-Request (base64), an attested
// field (attest.go), so the signature covers it, and exports write it as
// a WARC "request" record next to the response. Nothing is reconstructed:
// a capture without the field has no request record.

// HeaderRequest holds, base64, the HTTP request head sent for a capture.
const HeaderRequest = "WARC-Herod-Request"

// MaxRequestHead bounds the request head a capture may carry: a longer one
// is not kept (Put drops it) and a record with one is malformed.
const MaxRequestHead = 8 << 10

// requestHeaders returns the WARC field of c's request head, none when it
// has none.
func requestHeaders(c *Capture) []warcHeader {
	if len(c.Request) == 0 {
		return nil
	}
	return []warcHeader{{HeaderRequest, base64.StdEncoding.EncodeToString(c.Request)}}
}

// parseRequest reads a record's request head into c.
func parseRequest(h interface{ Get(string) string }, c *Capture) error {
	v := h.Get(HeaderRequest)
	if v == "" {
		return nil
	}
	if len(v) > base64.StdEncoding.EncodedLen(MaxRequestHead) {
		return malformed("%s of %d bytes", HeaderRequest, len(v))
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || !validRequestHead(b) {
		return malformed("%s: not an HTTP request head", HeaderRequest)
	}
	c.Request = b
	return nil
}

// validRequestHead reports whether b looks like an HTTP/1 request head: a
// request line and fields ending in an empty line, within MaxRequestHead.
func validRequestHead(b []byte) bool {
	if len(b) == 0 || len(b) > MaxRequestHead || !bytes.HasSuffix(b, []byte("\r\n\r\n")) {
		return false
	}
	line, _, _ := bytes.Cut(b, []byte("\r\n"))
	return bytes.Count(line, []byte(" ")) == 2 && bytes.Contains(line, []byte(" HTTP/"))
}

// httpRequestType is the Content-Type of a WARC request record's block.
const httpRequestType = "application/http;msgtype=request"

// RequestRecordID returns the WARC-Record-ID of the request record written
// before the response record whose WARC-Record-ID is responseID: derived
// from it, so that exporting the same response again writes the same
// request record, byte for byte.
func RequestRecordID(responseID string) string { return recordID("request of", responseID) }

// encodeRequest renders, as one gzip member, the WARC request record of
// the response record of v, whose capture carries the request head req:
// the response's date and target, WARC-Concurrent-To naming it, the head
// as the block.
func (p *gzipPool) encodeRequest(dst *bytes.Buffer, v Version, req []byte) error {
	date := formatWarcDate(v.Time)
	resp := recordID("response", v.URL, date, v.Digest.String())
	fields := []warcHeader{
		{"WARC-Type", "request"},
		{"WARC-Record-ID", RequestRecordID(resp)},
		{"WARC-Date", date},
		{"WARC-Target-URI", v.URL},
		{"WARC-Concurrent-To", resp},
		{"Content-Type", httpRequestType},
		{"WARC-Block-Digest", warcDigest(sha1Of(req))},
	}
	return p.member(dst, func(w io.Writer) error { return writeRecordTo(w, fields, req, nil) })
}
