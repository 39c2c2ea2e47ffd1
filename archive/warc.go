package archive

import (
	"bytes"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/net/http/httpguts"

	"github.com/herod-archive/herod/internal/id"
)

// WARC constants used by the writer and checked by the reader.
const (
	warcVersion      = "WARC/1.1"
	httpResponseType = "application/http;msgtype=response"
	// origPrefix marks response headers the archive rewrote so that the
	// stored record is self-consistent (the convention pywb and warcio use).
	origPrefix = "X-Archive-Orig-"
	// RevisitProfile is the WARC 1.1 profile of exported revisit records.
	RevisitProfile = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
	// NotModifiedProfile is the WARC-Profile of a revisit record for a
	// conditional GET answered 304 Not Modified.
	NotModifiedProfile = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
)

// DefaultGzipLevel is the compression level of version files when
// Options.GzipLevel is zero. Level 9 saves only about 2.5% of the bytes
// (0.229-0.276 against 0.234-0.282 bytes per HTML byte on real pages) for
// 2.5 times the CPU per Put; see BenchmarkPut and BenchmarkDiskPerHTMLByte.
const DefaultGzipLevel = 6

// gzipPool hands out gzip writers of one level.
type gzipPool struct {
	level int
	pool  sync.Pool // writers at level
}

func newGzipPool(level int) *gzipPool {
	p := &gzipPool{level: level}
	p.pool.New = func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, level)
		return w
	}
	return p
}

// warcDigest formats a SHA-1 digest the way WARC-*-Digest fields carry it.
func warcDigest(d id.ID) string {
	return "sha1:" + base32.StdEncoding.EncodeToString(d[:])
}

// parseWarcDigest parses "sha1:BASE32" (case-insensitive label, hex also
// accepted because some tools write it).
func parseWarcDigest(s string) (id.ID, error) {
	label, val, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || !strings.EqualFold(label, "sha1") {
		return id.ID{}, fmt.Errorf("unsupported digest %q", s)
	}
	var d id.ID
	if len(val) == 2*id.Size {
		return id.Parse(strings.ToLower(val))
	}
	b, err := base32.StdEncoding.DecodeString(strings.ToUpper(val))
	if err != nil || len(b) != id.Size {
		return id.ID{}, fmt.Errorf("bad sha1 digest %q", s)
	}
	copy(d[:], b)
	return d, nil
}

// recordID returns a deterministic urn:uuid (version 5 layout) for a record,
// so that re-encoding or exporting the same version always yields the same
// bytes.
func recordID(parts ...string) string {
	h := sha1.New()
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// formatWarcDate renders t as a WARC-Date: UTC, with fractional seconds
// only when t has them (W3C-DTF, allowed by WARC/1.1).
func formatWarcDate(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// httpHead renders the status line and headers of c as they are stored:
// keys sorted, Transfer-Encoding dropped and Content-Length set to the
// stored payload length, with the originals kept as X-Archive-Orig-*.
func httpHead(status int, h http.Header, bodyLen int) ([]byte, error) {
	if status < 100 || status > 999 {
		return nil, fmt.Errorf("bad http status %d", status)
	}
	var b bytes.Buffer
	reason := http.StatusText(status)
	if reason == "" {
		reason = "Unknown"
	}
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, reason)
	keys := make([]string, 0, len(h)+1)
	for k := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("bad header name %q", k)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(http.CanonicalHeaderKey(a), http.CanonicalHeaderKey(b)) })
	length := strconv.Itoa(bodyLen)
	for _, k := range keys {
		ck := http.CanonicalHeaderKey(k)
		for _, v := range h[k] {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("bad value for header %s", ck)
			}
			switch {
			case ck == "Transfer-Encoding":
				ck2 := origPrefix + ck
				fmt.Fprintf(&b, "%s: %s\r\n", ck2, v)
				continue
			case ck == "Content-Length":
				if strings.TrimSpace(v) != length {
					fmt.Fprintf(&b, "%sContent-Length: %s\r\n", origPrefix, v)
				}
				continue
			}
			fmt.Fprintf(&b, "%s: %s\r\n", ck, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %s\r\n\r\n", length)
	return b.Bytes(), nil
}

// warcHeader is one ordered WARC named field.
type warcHeader struct{ name, value string }

// writeRecordTo writes one uncompressed WARC record: version line, fields,
// Content-Length, block (head followed by payload) and the two CRLFs.
func writeRecordTo(w io.Writer, fields []warcHeader, head, payload []byte) error {
	var b bytes.Buffer
	b.WriteString(warcVersion + "\r\n")
	for _, f := range fields {
		fmt.Fprintf(&b, "%s: %s\r\n", f.name, f.value)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(head)+len(payload))
	for _, p := range [][]byte{b.Bytes(), head, payload, []byte("\r\n\r\n")} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// member compresses one record (written by fn) into a single gzip member
// at the pool's level.
func (p *gzipPool) member(dst *bytes.Buffer, fn func(io.Writer) error) error {
	zw := p.pool.Get().(*gzip.Writer)
	defer p.pool.Put(zw)
	zw.Reset(dst) // also clears the header
	if err := fn(zw); err != nil {
		return err
	}
	return zw.Close()
}

// sha1Of hashes the concatenation of parts.
func sha1Of(parts ...[]byte) id.ID {
	if len(parts) == 1 {
		return sha1.Sum(parts[0]) // no hash state or sum on the heap
	}
	h := sha1.New()
	return sumInto(h, parts...)
}

func sumInto(h hash.Hash, parts ...[]byte) id.ID {
	for _, p := range parts {
		h.Write(p)
	}
	var d id.ID
	copy(d[:], h.Sum(nil))
	return d
}

// encodeResponse renders c as one gzip member holding a WARC/1.1 response
// record into dst. t is the normalized capture time and digest the SHA-1
// of c.Body.
func (p *gzipPool) encodeResponse(dst *bytes.Buffer, c *Capture, t time.Time, digest id.ID) error {
	head, block, err := responseBlock(c)
	if err != nil {
		return err
	}
	plain, err := plainResponse(c, t, digest, head, block)
	if err != nil {
		return err
	}
	return p.compress(dst, plain)
}

// compress writes plain as one gzip member into dst.
func (p *gzipPool) compress(dst *bytes.Buffer, plain []byte) error {
	return p.member(dst, func(w io.Writer) error {
		_, err := w.Write(plain)
		return err
	})
}

// responseBlock returns the HTTP head of c's record and the SHA-1 of its
// block (the head, then the payload).
func responseBlock(c *Capture) ([]byte, id.ID, error) {
	if c.Resource {
		return nil, sha1Of(c.Body), nil
	}
	head, err := httpHead(c.Status, c.Header, len(c.Body))
	if err != nil {
		return nil, id.ID{}, err
	}
	return head, sha1Of(head, c.Body), nil
}

// plainResponse renders c as an uncompressed WARC/1.1 response record
// whose HTTP head and block digest are head and block (responseBlock).
func plainResponse(c *Capture, t time.Time, digest id.ID, head []byte, block id.ID) ([]byte, error) {
	fields := responseRecord(c, t, digest, block)
	var b bytes.Buffer
	b.Grow(len(head) + len(c.Body) + 1024)
	if err := writeRecordTo(&b, fields, head, c.Body); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// responseRecord returns the WARC fields of c's record.
func responseRecord(c *Capture, t time.Time, digest, block id.ID) []warcHeader {
	date := formatWarcDate(t)
	var truncated []warcHeader
	if c.Truncated != "" {
		truncated = []warcHeader{{"WARC-Truncated", c.Truncated}}
	}
	typ, ctype := "response", httpResponseType
	if c.Resource {
		typ, ctype = "resource", resourceType(c)
	}
	return append(append([]warcHeader{
		{"WARC-Type", typ},
		{"WARC-Record-ID", recordID(typ, c.URL, date, digest.String())},
		{"WARC-Date", date},
		{"WARC-Target-URI", c.URL},
		{"Content-Type", ctype},
		{"WARC-Payload-Digest", warcDigest(digest)},
		{"WARC-Block-Digest", warcDigest(block)},
	}, truncated...), append(append(append(provenanceHeaders(c), browserHeaders(c)...), importHeaders(c)...), requestHeaders(c)...)...)
}

// encodeRevisit renders a revisit record for a check at time t of the
// stored version v, whose HTTP head is head: server-not-modified when the
// check was answered 304 (its block is a 304 head with the stored
// version's validators), identical-payload-digest otherwise (its block is
// the stored head).
func (p *gzipPool) encodeRevisit(dst *bytes.Buffer, v Version, t time.Time, head []byte, notModified bool) error {
	date := formatWarcDate(t)
	profile := RevisitProfile
	if notModified && head != nil {
		profile, head = NotModifiedProfile, notModifiedHead(head)
	}
	ctype, refType := []warcHeader{{"Content-Type", httpResponseType}}, "response"
	if head == nil {
		ctype, refType = nil, "resource" // no HTTP head to repeat
	}
	fields := []warcHeader{
		{"WARC-Type", "revisit"},
		{"WARC-Record-ID", recordID("revisit", v.URL, date, v.Digest.String())},
		{"WARC-Date", date},
		{"WARC-Target-URI", v.URL},
		{"WARC-Profile", profile},
		{"WARC-Refers-To-Target-URI", v.URL},
		{"WARC-Refers-To-Date", formatWarcDate(v.Time)},
		{"WARC-Refers-To", recordID(refType, v.URL, formatWarcDate(v.Time), v.Digest.String())},
	}
	fields = append(append(fields, ctype...),
		warcHeader{"WARC-Payload-Digest", warcDigest(v.Digest)},
		warcHeader{"WARC-Block-Digest", warcDigest(sha1Of(head))})
	return p.member(dst, func(w io.Writer) error { return writeRecordTo(w, fields, head, nil) })
}

// notModifiedHead returns a 304 response head carrying the validators and
// caching fields of the stored head (herod keeps no 304's own headers).
func notModifiedHead(head []byte) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 304 Not Modified\r\n")
	lines := bytes.Split(head, []byte("\r\n"))
	for _, l := range lines[min(1, len(lines)):] {
		name, _, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			continue
		}
		switch strings.ToLower(string(bytes.TrimSpace(name))) {
		case "etag", "last-modified", "cache-control", "expires", "vary", "content-location":
			b.Write(l)
			b.WriteString("\r\n")
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// recordPool compresses the records EncodeRecord returns.
var recordPool = newGzipPool(DefaultGzipLevel)

// EncodeRecord returns c's record as a store writes it — one gzip member
// holding one WARC/1.1 response record (resource for c.Resource), with
// c's provenance and browser marker — for an exporter that holds a
// decoded capture rather than its record (a WACZ's screenshots): a
// capture read back from a store encodes to a record that verifies as
// the stored one does.
func EncodeRecord(c *Capture) ([]byte, error) {
	if err := checkCapture(c); err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	d := c.Digest
	if d.IsZero() {
		d = sha1Of(c.Body)
	}
	head, block, err := responseBlock(c)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	plain, err := plainResponse(c, c.Time.UTC().Round(0), d, head, block)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	var b bytes.Buffer
	if err := recordPool.compress(&b, plain); err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return b.Bytes(), nil
}
