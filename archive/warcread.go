package archive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
)

// Reader limits. A record larger than maxBlock is refused rather than read
// into memory; a header line longer than maxLine is malformed.
const (
	maxBlock   = 256 << 20
	maxLine    = 16 << 10
	maxHeaders = 1000
)

// errMalformed is wrapped (with ErrCorrupt) by every parse failure.
var errMalformed = errors.New("malformed warc record")

// Record is one parsed WARC record: its named fields (keys in canonical
// MIME form, e.g. "Warc-Target-Uri") and its block.
type Record struct {
	Version string               // "WARC/1.1" or "WARC/1.0"
	Header  textproto.MIMEHeader // named fields
	Block   []byte
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrCorrupt, errMalformed, fmt.Sprintf(format, args...))
}

// readLine returns one line without its CRLF or LF, refusing lines longer
// than maxLine. It returns io.EOF only when no byte was read.
func readLine(br *bufio.Reader) (string, error) {
	// Most lines are within the buffer: one string, no copy to join.
	frag, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return readLongLine(br, frag)
	}
	if len(frag) > maxLine {
		return "", malformed("line longer than %d bytes", maxLine)
	}
	if err != nil {
		if err == io.EOF && len(frag) > 0 {
			return "", malformed("truncated line")
		}
		return "", err
	}
	frag = bytes.TrimSuffix(frag[:len(frag)-1], []byte("\r"))
	return string(frag), nil
}

// readLongLine is readLine for a line longer than br's buffer, of which
// first was read.
func readLongLine(br *bufio.Reader, first []byte) (string, error) {
	line := bytes.Clone(first)
	if len(line) > maxLine {
		return "", malformed("line longer than %d bytes", maxLine)
	}
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxLine {
			return "", malformed("line longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return "", malformed("truncated line")
			}
			return "", err
		}
		break
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return string(line), nil
}

// warcKeys maps the WARC field names herod writes to their canonical MIME
// form, computed once: CanonicalMIMEHeaderKey allocates a new string for
// each, a dozen times a record read.
var warcKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"WARC-Type", "WARC-Record-ID", "WARC-Date", "WARC-Target-URI",
		"WARC-Block-Digest", "WARC-Payload-Digest", "WARC-Concurrent-To", "WARC-Truncated",
		"WARC-Refers-To", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Profile",
		"WARC-IP-Address", "WARC-Warcinfo-ID", HeaderPeer, HeaderSignature, HeaderBrowser,
		"Content-Type", "Content-Length"} {
		m[k] = textproto.CanonicalMIMEHeaderKey(k)
	}
	return m
}()

// canonicalKey is textproto.CanonicalMIMEHeaderKey(name).
func canonicalKey(name string) string {
	if k, ok := warcKeys[name]; ok {
		return k
	}
	return textproto.CanonicalMIMEHeaderKey(name)
}

// readFields reads "Name: value" lines up to an empty line. Lines starting
// with a space or tab continue the previous value.
func readFields(br *bufio.Reader) (textproto.MIMEHeader, error) {
	h := make(textproto.MIMEHeader)
	var last string
	for n := 0; ; n++ {
		if n > maxHeaders {
			return nil, malformed("more than %d header lines", maxHeaders)
		}
		line, err := readLine(br)
		if err == io.EOF {
			return nil, malformed("truncated header")
		}
		if err != nil {
			return nil, err
		}
		if line == "" {
			return h, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last == "" {
				return nil, malformed("continuation without a field")
			}
			vs := h[last]
			vs[len(vs)-1] += " " + strings.TrimSpace(line)
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, malformed("bad field line %q", line)
		}
		last = canonicalKey(name)
		h[last] = append(h[last], strings.TrimSpace(value))
	}
}

// ReadRecord reads one uncompressed WARC record from br. It returns io.EOF
// when br is at its end before the record starts; malformed input gives an
// error wrapping ErrCorrupt, and read errors of br are returned as they are.
// The block grows as its bytes arrive: a record that declares a large
// Content-Length costs only the bytes that came (for records from peers;
// ReadRecordMax also bounds them).
func ReadRecord(br *bufio.Reader) (*Record, error) { return readRecord(br, maxBlock, true) }

// ReadRecordMax is ReadRecord for a block of at most max bytes: a record
// that declares more is refused before its block is read. Readers of
// peer data pass the node's --max-body plus room for the HTTP head
// (MaxHead), and read br from a decompressor cut at that bound
// (wire.LimitReader), so that a decompression bomb stops there.
func ReadRecordMax(br *bufio.Reader, max int64) (*Record, error) {
	return readRecord(br, min(max, maxBlock), true)
}

// MaxHead is the room a record's block may take beyond its payload (the
// HTTP status line and headers), and its WARC header beyond its block,
// in the bounds of records from peers.
const MaxHead = 256 << 10

// readHead checks a record's version line, read already, and reads its
// header fields: the fields and the block's length, at most max. A
// field's read error is returned as readFields gave it.
func readHead(br *bufio.Reader, line string, max int64) (textproto.MIMEHeader, int64, error) {
	if line != "WARC/1.1" && line != "WARC/1.0" {
		return nil, 0, malformed("bad version line %q", line)
	}
	h, err := readFields(br)
	if err != nil {
		return nil, 0, err
	}
	n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return nil, 0, malformed("bad Content-Length %q", h.Get("Content-Length"))
	}
	if n > max {
		return nil, 0, malformed("block of %d bytes exceeds %d", n, max)
	}
	return h, n, nil
}

// readRecord is ReadRecord with a block limit; grow reads the block as it
// arrives rather than allocate the declared length first (records of
// this node's own segments, verified by their index, need not).
func readRecord(br *bufio.Reader, max int64, grow bool) (*Record, error) {
	line, err := readLine(br)
	for err == nil && line == "" { // tolerate extra blank lines between records
		line, err = readLine(br)
	}
	if err != nil {
		return nil, err
	}
	h, n, err := readHead(br, line, max)
	if err != nil {
		return nil, err
	}
	var block []byte
	if grow && n > growFrom {
		block, err = wire.ReadAll(io.LimitReader(br, n), n)
		if err == nil && int64(len(block)) != n {
			err = io.ErrUnexpectedEOF
		}
	} else {
		block = make([]byte, n)
		_, err = io.ReadFull(br, block)
	}
	if err != nil {
		return nil, malformed("truncated block: %v", err)
	}
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil || string(tail[:]) != "\r\n\r\n" {
		return nil, malformed("missing record trailer")
	}
	return &Record{Version: line, Header: h, Block: block}, nil
}

// growFrom is the block size from which a record of a peer is read as
// it arrives rather than allocated at its declared length.
const growFrom = 1 << 20

// response is a parsed HTTP response block.
type response struct {
	status  int
	header  http.Header
	head    []byte // status line and headers, as stored
	payload []byte
}

// headReaders holds the buffered readers parseHTTPResponse reads heads
// with (4 KiB: a larger buffer would copy more of the payload).
var headReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// parseHTTPResponse splits an application/http;msgtype=response block.
func parseHTTPResponse(block []byte) (*response, error) {
	src := bytes.NewReader(block)
	br := headReaders.Get().(*bufio.Reader)
	br.Reset(src)
	defer func() {
		br.Reset(nil) // drop the reference to block
		headReaders.Put(br)
	}()
	status, fields, err := readHTTPHead(br)
	if err != nil {
		return nil, err
	}
	headLen := len(block) - src.Len() - br.Buffered()
	return &response{status: status, header: http.Header(fields), head: block[:headLen], payload: block[headLen:]}, nil
}

// readHTTPHead reads an HTTP response's status line and header fields.
func readHTTPHead(br *bufio.Reader) (int, textproto.MIMEHeader, error) {
	line, err := readLine(br)
	if err != nil {
		return 0, nil, malformed("http status line: %v", err)
	}
	proto, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/") {
		return 0, nil, malformed("bad http status line %q", line)
	}
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 || status < 100 {
		return 0, nil, malformed("bad http status %q", code)
	}
	fields, err := readFields(br)
	if err != nil {
		return 0, nil, err
	}
	return status, fields, nil
}

// memberReader is the reusable state of decodeMember: a gzip reader and
// a buffered reader over it (together about 100 KB, worth pooling).
type memberReader struct {
	zr gzip.Reader
	br *bufio.Reader
}

var readerPool = sync.Pool{New: func() any {
	return &memberReader{br: bufio.NewReaderSize(nil, 64<<10)}
}}

// decodedFile is a verified response record from one version file.
type decodedFile struct {
	capture Capture
	digest  id.ID // payload
	block   id.ID // the block: HTTP head and payload
	head    []byte
}

// decodeMember reads data as exactly one gzip member holding one WARC
// response record, and verifies its block and payload digests. Every
// failure wraps ErrCorrupt.
func decodeMember(data []byte) (*decodedFile, error) { return decodeMemberTo(data, nil) }

// decodeMemberTo is decodeMember that also appends the member's
// uncompressed bytes to raw, if not nil: for the store's own records.
func decodeMemberTo(data []byte, raw *bytes.Buffer) (*decodedFile, error) {
	return decodeMemberMax(data, raw, 0)
}

// decodeMemberMax is decodeMemberTo for a member from a peer when
// maxBlock > 0: a block over maxBlock is refused before it is read, the
// decompressed bytes stop at maxBlock plus MaxHead, and the block grows
// as it arrives, so that a small member that expands to much, or that
// declares a large length, costs no more than the bound.
func decodeMemberMax(data []byte, raw *bytes.Buffer, maxBlock int64) (*decodedFile, error) {
	src := bytes.NewReader(data)
	d := readerPool.Get().(*memberReader)
	defer readerPool.Put(d)
	zr := &d.zr
	if err := zr.Reset(src); err != nil {
		return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
	}
	zr.Multistream(false)
	var plain io.Reader = zr
	if maxBlock > 0 {
		plain = wire.LimitReader(zr, maxBlock+MaxHead)
	}
	br := d.br
	if raw != nil {
		br.Reset(io.TeeReader(plain, raw))
	} else {
		br.Reset(plain)
	}
	defer br.Reset(nil) // drop the reference to data
	var rec *Record
	var err error
	if maxBlock > 0 {
		rec, err = readOnlyMax(br, maxBlock, true)
	} else {
		rec, err = readOnly(br)
	}
	if err != nil {
		return nil, err
	}
	if err := zr.Close(); err != nil {
		return nil, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
	}
	if src.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the gzip member", ErrCorrupt, src.Len())
	}
	return decodeResponse(rec)
}

// decodePlain reads plain as exactly one uncompressed WARC response
// record and verifies it as decodeMember does.
func decodePlain(plain []byte) (*decodedFile, error) {
	d := readerPool.Get().(*memberReader)
	defer readerPool.Put(d)
	br := d.br
	br.Reset(bytes.NewReader(plain))
	defer br.Reset(nil)
	rec, err := readOnly(br)
	if err != nil {
		return nil, err
	}
	return decodeResponse(rec)
}

// readOnly reads the one record br holds, of the store's own; anything
// after it is an error. Every failure wraps ErrCorrupt.
func readOnly(br *bufio.Reader) (*Record, error) { return readOnlyMax(br, maxBlock, false) }

// readOnlyMax is readOnly with readRecord's block limit and growth.
func readOnlyMax(br *bufio.Reader, max int64, grow bool) (*Record, error) {
	rec, err := readRecord(br, max, grow)
	if err == io.EOF {
		return nil, malformed("empty file")
	}
	if err != nil && !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err != nil {
		return nil, err
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data or bad compression: %v", ErrCorrupt, err)
	}
	return rec, nil
}

// decodeResponse checks a response record and returns its capture.
func decodeResponse(rec *Record) (*decodedFile, error) {
	typ := rec.Header.Get("Warc-Type")
	if typ != "response" && typ != "resource" {
		return nil, malformed("record type %q, want response or resource", typ)
	}
	uri := rec.Header.Get("Warc-Target-Uri")
	if uri == "" {
		return nil, malformed("no WARC-Target-URI")
	}
	t, err := time.Parse(time.RFC3339Nano, rec.Header.Get("Warc-Date"))
	if err != nil {
		return nil, malformed("bad WARC-Date %q", rec.Header.Get("Warc-Date"))
	}
	bd, err := parseWarcDigest(rec.Header.Get("Warc-Block-Digest"))
	if err != nil {
		return nil, malformed("WARC-Block-Digest: %v", err)
	}
	if sha1Of(rec.Block) != bd {
		return nil, fmt.Errorf("%w: block digest mismatch", ErrCorrupt)
	}
	var resp *response
	if typ == "resource" {
		// The block is the payload; the record's Content-Type is its type.
		status, header, err := resourceFields(rec.Header)
		if err != nil {
			return nil, err
		}
		resp = &response{status: status, header: header, payload: rec.Block}
	} else if _, ok := ScreenshotPage(uri); ok {
		return nil, malformed("screenshot %q in a response record", uri)
	} else if resp, err = parseHTTPResponse(rec.Block); err != nil {
		return nil, err
	}
	pd, err := parseWarcDigest(rec.Header.Get("Warc-Payload-Digest"))
	if err != nil {
		return nil, malformed("WARC-Payload-Digest: %v", err)
	}
	if sha1Of(resp.payload) != pd {
		return nil, fmt.Errorf("%w: payload digest mismatch", ErrCorrupt)
	}
	f := &decodedFile{
		capture: Capture{URL: uri, Time: t.UTC(), Status: resp.status, Header: resp.header, Body: resp.payload,
			Truncated: rec.Header.Get("Warc-Truncated"), Resource: typ == "resource"},
		digest: pd,
		block:  bd,
		head:   resp.head,
	}
	if err := parseProvenance(rec.Header, &f.capture); err != nil {
		return nil, err
	}
	return f, nil
}
