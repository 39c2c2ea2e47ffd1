package export

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/textproto"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
)

// Request records. archive.Export writes the request record of a
// response whose capture carries the request head sent for it right
// before the response, in the same record frame of a reply. A member
// reads it with its response: it must be exactly the record the
// response's attested WARC-Herod-Request field yields (its block that
// head, its date and target the response's, WARC-Concurrent-To the
// response's record id, its own id derived from that), and a request
// record without its response is a bad reply. The merged stream carries
// both, the request first; a resume cursor is the response's, so a
// resumed export never splits them.

// splitRequest returns the request record at the start of a record
// frame and the bytes after its gzip member, or nil and the whole frame
// when it does not start with a well-formed request record (checkMember
// then refuses whatever it holds).
func splitRequest(body []byte) (*archive.Record, []byte) {
	rd := bytes.NewReader(body)
	zr, err := gzip.NewReader(rd)
	if err != nil {
		return nil, body
	}
	zr.Multistream(false)
	br := bufio.NewReader(wire.LimitReader(zr, archive.MaxRequestHead+archive.MaxHead))
	rec, err := archive.ReadRecordMax(br, archive.MaxRequestHead)
	if err != nil || rec.Header.Get("Warc-Type") != "request" {
		return nil, body
	}
	if _, err := br.Peek(1); err != io.EOF {
		return nil, body
	}
	if _, err := io.Copy(io.Discard, wire.LimitReader(zr, 0)); err != nil {
		return nil, body
	}
	return rec, body[len(body)-rd.Len():]
}

// checkRequest verifies that req is the request record of the response
// record whose WARC fields are resp, checked by checkMember against h.
func checkRequest(req *archive.Record, resp textproto.MIMEHeader, h recordHeader) error {
	rh := req.Header
	head, err := base64.StdEncoding.DecodeString(resp.Get(archive.HeaderRequest))
	respID := resp.Get("Warc-Record-Id")
	switch {
	case resp.Get("Warc-Type") != "response":
		return fmt.Errorf("request record of %.100q before a %.20q record", h.URL, resp.Get("Warc-Type"))
	case err != nil || len(head) == 0:
		return fmt.Errorf("request record of %.100q before a response without a request head", h.URL)
	case !bytes.Equal(req.Block, head):
		return fmt.Errorf("request record of %.100q: block is not the response's request head", h.URL)
	case !digestIs(rh.Get("Warc-Block-Digest"), id.Sum(req.Block)):
		return fmt.Errorf("request record of %.100q: block digest mismatch", h.URL)
	case rh.Get("Warc-Target-Uri") != h.URL || rh.Get("Warc-Date") != resp.Get("Warc-Date"):
		return fmt.Errorf("request record of %.100q: target %.100q at %.40q, not the response's", h.URL, rh.Get("Warc-Target-Uri"), rh.Get("Warc-Date"))
	case rh.Get("Warc-Concurrent-To") != respID || rh.Get("Warc-Record-Id") != archive.RequestRecordID(respID):
		return fmt.Errorf("request record of %.100q: record id %.60q concurrent to %.60q, response is %.60q", h.URL, rh.Get("Warc-Record-Id"), rh.Get("Warc-Concurrent-To"), respID)
	case rh.Get("Content-Type") != "application/http;msgtype=request":
		return fmt.Errorf("request record of %.100q: Content-Type %.60q", h.URL, rh.Get("Content-Type"))
	}
	return nil
}
