package importer

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// Converting a source record into a capture. A response record's block
// is an HTTP response: its status and headers are kept, its payload is
// the bytes after the head (de-chunked when the head says chunked, the
// original Transfer-Encoding kept as X-Archive-Orig-). A resource record
// is a 200 whose Content-Type is the record's. A revisit record takes the
// payload of the record it refers to (by WARC-Refers-To, else by its
// payload digest) from earlier in the same file, and its own HTTP head
// when it has one. Digests the record declares (sha1 or sha256, base32
// or hex) are checked: a record whose block or payload does not match is
// damaged. warcinfo, request, metadata, conversion and continuation
// records, and records of other schemes than http and https, are not
// imported (skipped, counted).

// errSkip marks a record that is not imported, by design.
var errSkip = errors.New("not imported")

// errDamaged wraps every reason a record cannot be imported.
var errDamaged = errors.New("damaged record")

func damaged(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errDamaged, fmt.Sprintf(format, args...))
}

// converter turns the records of one source file into captures.
type converter struct {
	source string // the file's "sha256:<hex>"
	cache  payloadCache
}

// convert returns the capture of it; an error wrapping errSkip for a
// record that is not imported, errDamaged for one that cannot be.
func (cv *converter) convert(it item) (*archive.Capture, error) {
	switch {
	case it.err != nil:
		return nil, fmt.Errorf("%w: %w", errDamaged, it.err)
	case it.arc != nil:
		return cv.convertARC(it)
	}
	h := it.rec.Header
	typ := h.Get("Warc-Type")
	switch typ {
	case "response", "resource", "revisit":
	default:
		return nil, fmt.Errorf("%w: a %s record", errSkip, typ)
	}
	rid := h.Get("Warc-Record-Id")
	uri := strings.Trim(h.Get("Warc-Target-Uri"), "<>")
	if !strings.HasPrefix(uri, "http://") && !strings.HasPrefix(uri, "https://") {
		return nil, fmt.Errorf("%w: target %.100q is not http or https", errSkip, uri)
	}
	u, err := canon.Canonical(uri)
	if err != nil {
		return nil, damaged("target %.100q: %v", uri, err)
	}
	t, err := time.Parse(time.RFC3339Nano, h.Get("Warc-Date"))
	if err != nil {
		return nil, damaged("WARC-Date %q", h.Get("Warc-Date"))
	}
	if err := checkDigest(h.Get("Warc-Block-Digest"), it.rec.Block); err != nil {
		return nil, damaged("block: %v", err)
	}
	c := &archive.Capture{URL: u, Time: t.UTC(), Truncated: h.Get("Warc-Truncated"),
		Imported: &archive.Import{From: cv.source, Record: rid}}
	pd := h.Get("Warc-Payload-Digest")
	switch typ {
	case "response":
		if !bytes.HasPrefix(it.rec.Block, []byte("HTTP/")) {
			return nil, fmt.Errorf("%w: a response record that is not HTTP", errSkip)
		}
		status, header, payload, err := parseHTTP(it.rec.Block)
		if err != nil {
			return nil, damaged("%v", err)
		}
		if err := checkDigest(pd, payload); err != nil {
			return nil, damaged("payload: %v", err)
		}
		c.Status, c.Header, c.Body = status, header, dechunk(header, payload)
	case "resource":
		if err := checkDigest(pd, it.rec.Block); err != nil {
			return nil, damaged("payload: %v", err)
		}
		c.Status, c.Header, c.Body = http.StatusOK, http.Header{}, it.rec.Block
		if ct := h.Get("Content-Type"); ct != "" {
			c.Header.Set("Content-Type", ct)
		}
	case "revisit":
		p, ok := cv.cache.find(h.Get("Warc-Refers-To"), pd)
		if !ok {
			return nil, damaged("revisit of %s: the record it refers to (%s) is not earlier in this file",
				uri, firstOf(h.Get("Warc-Refers-To"), pd))
		}
		c.Status, c.Header, c.Body = p.status, p.header, p.body
		if bytes.HasPrefix(it.rec.Block, []byte("HTTP/")) {
			if status, header, _, err := parseHTTP(it.rec.Block); err == nil && status != http.StatusNotModified {
				c.Status, c.Header = status, header
			}
		}
	}
	if pd == "" {
		pd = "sha1:" + base32.StdEncoding.EncodeToString(sha1Sum(c.Body))
	}
	cv.cache.put(rid, pd, payload{status: c.Status, header: c.Header, body: c.Body})
	return c, nil
}

// convertARC is convert for an ARC record.
func (cv *converter) convertARC(it item) (*archive.Capture, error) {
	a := it.arc
	if !strings.HasPrefix(a.URL, "http://") && !strings.HasPrefix(a.URL, "https://") {
		return nil, fmt.Errorf("%w: ARC record of %.100q", errSkip, a.URL)
	}
	u, err := canon.Canonical(a.URL)
	if err != nil {
		return nil, damaged("URL %.100q: %v", a.URL, err)
	}
	c := &archive.Capture{URL: u, Time: a.Date,
		Imported: &archive.Import{From: cv.source, Record: "arc:" + it.where}}
	if bytes.HasPrefix(a.Block, []byte("HTTP/")) {
		status, header, body, err := parseHTTP(a.Block)
		if err != nil {
			return nil, damaged("%v", err)
		}
		c.Status, c.Header, c.Body = status, header, dechunk(header, body)
	} else {
		c.Status, c.Header, c.Body = http.StatusOK, http.Header{"Content-Type": {a.ContentType}}, a.Block
	}
	return c, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseHTTP splits an HTTP response block into status, headers and
// payload.
func parseHTTP(block []byte) (int, http.Header, []byte, error) {
	src := bytes.NewReader(block)
	br := bufio.NewReader(src)
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("http status line: %w", err)
	}
	_, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	status, err := strconv.Atoi(code)
	if err != nil || status < 100 || status > 999 {
		return 0, nil, nil, fmt.Errorf("http status line %.80q", line)
	}
	mh, err := tp.ReadMIMEHeader()
	if err != nil && !(errors.Is(err, io.EOF) && len(mh) > 0) {
		return 0, nil, nil, fmt.Errorf("http headers: %w", err)
	}
	head := len(block) - src.Len() - br.Buffered()
	return status, http.Header(mh), block[head:], nil
}

// dechunk returns body without its chunked transfer coding when header
// declares one and body decodes; body as it is otherwise.
func dechunk(header http.Header, body []byte) []byte {
	if !strings.EqualFold(strings.TrimSpace(header.Get("Transfer-Encoding")), "chunked") {
		return body
	}
	b, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(body)))
	if err != nil {
		return body
	}
	return b
}

func sha1Sum(b []byte) []byte { s := sha1.Sum(b); return s[:] }

// checkDigest checks a WARC digest field ("sha1:BASE32", "sha256:HEX"...)
// against b; an empty field or another algorithm is not checked.
func checkDigest(field string, b []byte) error {
	label, val, ok := strings.Cut(strings.TrimSpace(field), ":")
	if !ok {
		return nil
	}
	var sum []byte
	switch strings.ToLower(label) {
	case "sha1":
		sum = sha1Sum(b)
	case "sha256", "sha-256":
		s := sha256.Sum256(b)
		sum = s[:]
	default:
		return nil
	}
	var want []byte
	if len(val) == 2*len(sum) {
		want, _ = hex.DecodeString(val)
	}
	if want == nil {
		want, _ = base32.StdEncoding.DecodeString(strings.ToUpper(val))
	}
	if len(want) != len(sum) {
		return fmt.Errorf("digest %q does not parse", field)
	}
	if !bytes.Equal(want, sum) {
		return fmt.Errorf("digest mismatch: %s declared, the bytes hash to %s:%s", field, label, base32.StdEncoding.EncodeToString(sum))
	}
	return nil
}

// payload is what a revisit record takes from the record it refers to.
type payload struct {
	status int
	header http.Header
	body   []byte
}

// Bounds of the payloads kept for revisits: records larger than
// maxCached are not kept, and the oldest go once maxCache bytes are.
const (
	maxCached = 4 << 20
	maxCache  = 128 << 20
)

// payloadCache keeps the recent payloads of a file by record id and by
// payload digest, for its revisit records.
type payloadCache struct {
	byID     map[string]*payload
	byDigest map[string]*payload
	order    []string // record ids, oldest first, with their digests
	digests  []string
	bytes    int
}

func (pc *payloadCache) put(rid, digest string, p payload) {
	if len(p.body) > maxCached {
		return
	}
	if pc.byID == nil {
		pc.byID, pc.byDigest = map[string]*payload{}, map[string]*payload{}
	}
	pc.byID[rid] = &p
	pc.byDigest[strings.ToLower(digest)] = &p
	pc.order, pc.digests = append(pc.order, rid), append(pc.digests, strings.ToLower(digest))
	pc.bytes += len(p.body)
	for pc.bytes > maxCache && len(pc.order) > 0 {
		old := pc.byID[pc.order[0]]
		if old != nil {
			pc.bytes -= len(old.body)
		}
		delete(pc.byID, pc.order[0])
		if pc.byDigest[pc.digests[0]] == old {
			delete(pc.byDigest, pc.digests[0])
		}
		pc.order, pc.digests = pc.order[1:], pc.digests[1:]
	}
}

func (pc *payloadCache) find(rid, digest string) (payload, bool) {
	if p := pc.byID[rid]; rid != "" && p != nil {
		return *p, true
	}
	if p := pc.byDigest[strings.ToLower(digest)]; digest != "" && p != nil {
		return *p, true
	}
	return payload{}, false
}
