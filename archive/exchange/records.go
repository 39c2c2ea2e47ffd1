package exchange

import (
	"bufio"
	"bytes"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// ErrFormat reports a WARC stream that is not one record per gzip member.
var ErrFormat = errors.New("exchange: malformed warc stream")

// Member is one gzip member of a .warc.gz stream and the record it holds.
type Member struct {
	Raw    []byte          // the member's compressed bytes, verbatim
	Offset int64           // of the member in the stream
	Record *archive.Record // the decompressed record

	status int // of the HTTP response, once HTTP has parsed it
}

// Status returns the HTTP status of the record's response once HTTP has
// parsed it (the bulk converters do so before they convert), else 0.
func (m *Member) Status() int { return m.status }

// Type returns the record's WARC-Type.
func (m *Member) Type() string { return m.Record.Header.Get("Warc-Type") }

// URL returns the record's WARC-Target-URI.
func (m *Member) URL() string { return m.Record.Header.Get("Warc-Target-Uri") }

// Time returns the record's WARC-Date, the zero time if it does not parse.
func (m *Member) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, m.Record.Header.Get("Warc-Date"))
	return t.UTC()
}

// Peer returns the libp2p peer id of the node that fetched the version
// (archive.HeaderPeer), "" for a record without provenance. It is the one
// place exports learn a version's peer.
func (m *Member) Peer() string { return m.Record.Header.Get(archive.HeaderPeer) }

// Cursor returns the record's exact resume cursor in archive.Export's
// form, "<url> <RFC 3339 time> <payload digest, hex>": an export resumed
// after it continues with the next record. A record without a SHA-1
// payload digest gets the Wayback form "<url> <YYYYMMDDhhmmss>".
func (m *Member) Cursor() string {
	label, val, _ := strings.Cut(m.Record.Header.Get("Warc-Payload-Digest"), ":")
	d, err := base32.StdEncoding.DecodeString(strings.ToUpper(val))
	if !strings.EqualFold(label, "sha1") || err != nil || len(d) != len(id.ID{}) {
		return archive.WaybackCursor(m.URL(), m.Time())
	}
	return archive.CursorOf(m.URL(), m.Time(), id.ID(d)).String()
}

// HTTP parses the record's block as an HTTP response: its status, headers
// and payload (empty for a revisit, which stores the head only).
func (m *Member) HTTP() (status int, h http.Header, payload []byte, err error) {
	br := bufio.NewReader(bytes.NewReader(m.Record.Block))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%w: http head of %.100q: %v", ErrFormat, m.URL(), err)
	}
	defer resp.Body.Close()
	m.status = resp.StatusCode
	if m.Type() == "revisit" {
		return resp.StatusCode, resp.Header, nil, nil
	}
	i := bytes.Index(m.Record.Block, []byte("\r\n\r\n"))
	if i < 0 {
		return 0, nil, nil, fmt.Errorf("%w: http head of %.100q has no end", ErrFormat, m.URL())
	}
	return resp.StatusCode, resp.Header, m.Record.Block[i+4:], nil
}

// MediaType returns the media type of an HTTP Content-Type value, lower
// case, without parameters.
func MediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// tee records the bytes a gzip reader consumes, so a member can be kept
// verbatim once read. It has ReadByte, so the gzip reader reads no
// further than the end of its member.
type tee struct {
	r   *bufio.Reader
	buf bytes.Buffer
}

func (t *tee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf.Write(p[:n])
	return n, err
}

func (t *tee) ReadByte() (byte, error) {
	b, err := t.r.ReadByte()
	if err == nil {
		t.buf.WriteByte(b)
	}
	return b, err
}

// Records reads a .warc.gz stream of one record per gzip member and calls
// fn for each complete member, in order. Member.Raw is reused after fn
// returns. It stops at fn's error, which it returns, and at a truncated or
// malformed member (ErrFormat), for which fn is not called.
func Records(r io.Reader, fn func(*Member) error) error {
	t := &tee{r: bufio.NewReaderSize(r, 64<<10)}
	var zr gzip.Reader
	var off int64
	for n := 1; ; n++ {
		if _, err := t.r.Peek(1); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("exchange records: %w", err)
		}
		t.buf.Reset()
		if err := zr.Reset(t); err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrFormat, n, err)
		}
		zr.Multistream(false)
		br := bufio.NewReader(&zr)
		rec, err := archive.ReadRecord(br)
		if err != nil {
			return fmt.Errorf("%w: record %d: %v", ErrFormat, n, err)
		}
		if _, err := br.Peek(1); err != io.EOF {
			return fmt.Errorf("%w: record %d: more than one record in its gzip member", ErrFormat, n)
		}
		m := &Member{Raw: t.buf.Bytes(), Offset: off, Record: rec}
		if err := fn(m); err != nil {
			return err
		}
		off += int64(len(m.Raw))
	}
}

// timestamp14 formats t as the 14-digit CDX timestamp.
func timestamp14(t time.Time) string { return t.UTC().Format("20060102150405") }

// itoa is strconv.Itoa, shorter at call sites.
func itoa(n int) string { return strconv.Itoa(n) }
