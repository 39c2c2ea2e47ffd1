package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
)

// Bounds of the stream.
const (
	// Idle bounds the wait for one frame of an export stream, either way.
	// A member whose records come late in the merged order waits for the
	// others, so it is long.
	Idle = 5 * time.Minute
	// maxHeaderFrame bounds a record header.
	maxHeaderFrame = 64 << 10
	// MaxRecordFrame bounds one record (a gzip member).
	MaxRecordFrame = 64 << 20
	// maxRecordBlock bounds a record's block once decompressed: no capture
	// the ring stores is larger than a frame (the crawler's --max-body is
	// smaller), so a gzip bomb stops here, having allocated as it arrived.
	maxRecordBlock = MaxRecordFrame + archive.MaxHead
)

// Errors of a member's reply.
var (
	// ErrBadReply: the member broke the protocol (a record outside the
	// query, out of order, or not matching its header).
	ErrBadReply = errors.New("export: bad reply")
	// ErrRemote: the member reported an error.
	ErrRemote = errors.New("export: remote error")
	// ErrPartial: the merged stream misses a member's records from some
	// point on, or versions a member skipped as corrupt.
	ErrPartial = errors.New("export: partial export")
)

// recordHeader precedes each record of an export reply; the last header
// of a reply has End set and no record follows it.
type recordHeader struct {
	URL    string    `json:"url,omitempty"`
	Time   time.Time `json:"time,omitzero"`
	Digest id.ID     `json:"digest,omitzero"` // payload digest
	Cursor string    `json:"cursor,omitempty"`
	End    bool      `json:"end,omitempty"`
	Error  string    `json:"error,omitempty"` // with End: why the export stopped early
	// Skipped, with End, counts version files the member left out because
	// they failed verification (its log names them; herod fsck finds them).
	Skipped int `json:"skipped,omitempty"`
}

// LowerHost is the host of u as the archive orders it.
func LowerHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(p.Host)
}

// recordFramer sits between archive.Export and the reply: it collects the
// bytes of each record and, when Export reports the record done through
// Progress, sends its header and body frames.
type recordFramer struct {
	w       *bufio.Writer
	pending bytes.Buffer
	err     error
}

func (f *recordFramer) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.pending.Len()+len(p) > MaxRecordFrame {
		f.err = fmt.Errorf("record larger than %d bytes", MaxRecordFrame)
		return 0, f.err
	}
	return f.pending.Write(p)
}

// progress sends the collected record; Export calls it with the record's
// exact cursor, from which the header's fields are taken.
func (f *recordFramer) progress(cursor string) {
	if f.err != nil {
		return
	}
	k, err := archive.ParseCursor(cursor)
	if err != nil {
		f.err = fmt.Errorf("export cursor %.100q: %w", cursor, err)
		return
	}
	h := recordHeader{URL: k.URL, Time: k.Time, Digest: k.Digest, Cursor: cursor}
	if err := wire.WriteJSON(f.w, h); err != nil {
		f.err = err
		return
	}
	if err := wire.WriteFrame(f.w, f.pending.Bytes()); err != nil {
		f.err = err
		return
	}
	f.pending.Reset()
	f.err = f.w.Flush()
}

// Serve writes the reply of an archive export to w: a header and a body
// frame per record, then an end header carrying the versions the store
// skipped as corrupt and, if it stopped early, why. An error means w is
// broken and the reply incomplete.
func Serve(ctx context.Context, s Exporter, opts archive.ExportOptions, w io.Writer) error {
	f := &recordFramer{w: bufio.NewWriterSize(w, 64<<10)}
	end := recordHeader{End: true}
	opts.Progress = f.progress
	st, err := s.Export(ctx, opts, f, nil)
	if f.err != nil {
		return f.err // the stream is broken: nothing more can be sent
	}
	end.Skipped = len(st.Corrupt)
	if err != nil {
		end.Error = err.Error()
	}
	if err := wire.WriteJSON(f.w, end); err != nil {
		return err
	}
	return f.w.Flush()
}

// WriteError writes a reply that refuses the request: an end header
// carrying err.
func WriteError(w io.Writer, err error) error {
	return wire.WriteJSON(w, recordHeader{End: true, Error: err.Error()})
}

// Exporter is the archive a member exports from: archive.Store's method.
type Exporter interface {
	Export(ctx context.Context, opts archive.ExportOptions, warc, cdxj io.Writer) (archive.ExportStats, error)
}

// Verifier checks a record a remote member sent, as the archive checks a
// record before it imports one: *archive.Store's VerifyRecord (framing,
// digests, the fetcher's signature, the purge book).
type Verifier interface {
	VerifyRecord(data []byte) (*archive.Capture, id.ID, error)
}

var _ Verifier = (*archive.Store)(nil)

// maxVerifiedPerURL bounds the verified versions of one URL a Member
// remembers, to admit the revisits that refer to them.
const maxVerifiedPerURL = 4096

// Member reads one member's export reply and checks every record
// before it is merged: the header must match the query, come strictly
// after the previous one (and after the resume cursor), and the body must
// be one gzip member holding one WARC response record (or, when the query
// asked for them, a revisit record) whose target URI, date and digests
// agree with the header. A remote member's records (Open with a
// Verifier) must also pass the Verifier, and its revisits must refer to
// a version of the same URL it sent earlier in the reply that did (or
// one before the resume cursor); a
// record that fails is dropped and counted (Dropped), not merged.
type Member struct {
	name    string // member address, for errors
	r       *bufio.Reader
	setRD   func(time.Time) // read deadline per frame; nil for a local pipe
	q       cdx.Query
	last    archive.Cursor
	hasLast bool

	verify   Verifier        // nil: a local member, whose store verified its records
	after    *archive.Cursor // the resume cursor: the reply starts after it
	verified map[verifiedKey]bool
	verURL   string // the URL verified holds versions of
	dropped  int
	dropErr  error // the first drop's reason

	head    recordHeader // current record
	key     archive.Cursor
	body    []byte
	done    bool
	skipped int // corrupt files the member reported at the end
}

// verifiedKey is a verified version of the URL a Member last verified.
type verifiedKey struct {
	t time.Time
	d id.ID
}

// next reads the member's next record that passes its checks into head,
// key and body, or sets done at the end of a complete reply.
func (m *Member) next() error {
	for {
		ok, err := m.read()
		if err != nil || ok {
			return err
		}
	}
}

// read reads the member's next record into head, key and body, or sets
// done at the end of a complete reply. It returns false, without error,
// for a record it dropped as failing verification.
func (m *Member) read() (bool, error) {
	if m.setRD != nil {
		m.setRD(time.Now().Add(Idle))
	}
	var h recordHeader
	if err := wire.ReadJSON(m.r, maxHeaderFrame, &h); err != nil {
		return false, fmt.Errorf("member %s: export header: %w", m.name, err)
	}
	if h.End {
		if h.Error != "" {
			return false, fmt.Errorf("member %s: export: %w: %.300s", m.name, ErrRemote, h.Error)
		}
		m.done, m.skipped = true, max(h.Skipped, 0)
		return true, nil
	}
	k := archive.CursorOf(h.URL, h.Time, h.Digest)
	switch {
	case !m.q.Contains(archive.Version{URL: h.URL, Time: h.Time}):
		return false, fmt.Errorf("member %s: %w: record of %.100q outside the query", m.name, ErrBadReply, h.URL)
	case h.Cursor != k.String():
		return false, fmt.Errorf("member %s: %w: cursor %.100q does not match its record", m.name, ErrBadReply, h.Cursor)
	case m.hasLast && k.Compare(m.last) <= 0:
		return false, fmt.Errorf("member %s: %w: record of %.100q out of order", m.name, ErrBadReply, h.URL)
	}
	body, err := wire.ReadFrame(m.r, MaxRecordFrame)
	if err != nil {
		return false, fmt.Errorf("member %s: export record: %w", m.name, err)
	}
	// A request record may precede the response, in the same frame
	// (archive.Export writes them together): it must be that response's.
	req, resp := splitRequest(body)
	if req != nil && len(resp) == 0 {
		return false, fmt.Errorf("member %s: %w: request record of %.100q without its response", m.name, ErrBadReply, h.URL)
	}
	refersTo, hd, err := checkMember(resp, h, m.q.Revisits)
	if err == nil && req != nil {
		err = checkRequest(req, hd, h)
	}
	if err != nil {
		return false, fmt.Errorf("member %s: %w: %w", m.name, ErrBadReply, err)
	}
	if refersTo.IsZero() && (m.q.Status != 0 || m.q.Type != "") {
		// The header has no status or media type: the record's head does.
		status, mt, err := responseHead(resp)
		if err != nil || !m.q.Contains(archive.Version{URL: h.URL, Time: h.Time, Status: status, ContentType: mt}) {
			return false, fmt.Errorf("member %s: %w: record of %.100q (status %d, %q) outside the query (%v)", m.name, ErrBadReply, h.URL, status, mt, err)
		}
	}
	m.last, m.hasLast = k, true
	if err := m.verifyRecord(resp, h, refersTo); err != nil {
		m.dropped++
		if m.dropErr == nil {
			m.dropErr = err
		}
		return false, nil
	}
	if m.q.Hide != nil && m.q.Hide.Hidden(h.URL, h.Time) {
		return false, nil // the access rules keep it from this export (gateway/access.go)
	}
	m.head, m.key, m.body = h, k, body
	return true, nil
}

// verifyRecord checks a remote member's record, checked by checkRecord
// (refersTo is a revisit's WARC-Refers-To-Date, zero for a response),
// with the Verifier, and remembers a verified response for the revisits
// that follow it. A revisit carries no signature: it is admitted when the
// version it refers to passed earlier in the reply or, in a resumed
// export, lies before the resume cursor (in the part delivered before).
func (m *Member) verifyRecord(body []byte, h recordHeader, refersTo time.Time) error {
	if m.verify == nil {
		return nil
	}
	if h.URL != m.verURL {
		m.verURL, m.verified = h.URL, map[verifiedKey]bool{}
	}
	if !refersTo.IsZero() {
		ref := archive.CursorOf(h.URL, refersTo, h.Digest)
		resumed := m.after != nil && ref.Compare(*m.after) <= 0
		if !resumed && !m.verified[verifiedKey{refersTo, h.Digest}] {
			return fmt.Errorf("revisit of %.100q at %s refers to no verified version", h.URL, h.Time.Format(time.RFC3339))
		}
		return nil
	}
	c, digest, err := m.verify.VerifyRecord(body)
	switch {
	case err != nil:
		return fmt.Errorf("record of %.100q: %w", h.URL, err)
	case c.URL != h.URL || !c.Time.Equal(h.Time) || digest != h.Digest:
		return fmt.Errorf("record of %.100q: verified record is another version", h.URL)
	}
	if len(m.verified) < maxVerifiedPerURL {
		m.verified[verifiedKey{h.Time, h.Digest}] = true
	}
	return nil
}

// Dropped returns how many records of the member were dropped as failing
// verification, and the first one's reason.
func (m *Member) Dropped() (int, error) { return m.dropped, m.dropErr }

// b32 is the digest encoding of WARC-*-Digest fields.
var b32 = base32.StdEncoding

// checkRecord verifies that body is exactly one gzip member holding one
// WARC response record of h's URL, time and payload digest, whose block
// and payload digests hold. With revisits it also accepts a revisit record
// of the identical-payload-digest profile: its block (the HTTP head, no
// payload) must match its block digest and its payload digest must be
// the header's, the digest of the version it refers to, which cannot be
// checked here without that version: checkRecord returns its
// WARC-Refers-To-Date (zero for a response record).
func checkRecord(body []byte, h recordHeader, revisits bool) (time.Time, error) {
	t, _, err := checkMember(body, h, revisits)
	return t, err
}

// checkMember is checkRecord that also returns the record's WARC fields.
func checkMember(body []byte, h recordHeader, revisits bool) (time.Time, textproto.MIMEHeader, error) {
	rd := bytes.NewReader(body)
	zr, err := gzip.NewReader(rd)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	zr.Multistream(false)
	br := bufio.NewReader(wire.LimitReader(zr, maxRecordBlock+archive.MaxHead))
	rec, err := archive.ReadRecordMax(br, maxRecordBlock)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	switch _, err := br.Peek(1); {
	case err == nil:
		return time.Time{}, nil, fmt.Errorf("record of %.100q: more than one record in its gzip member", h.URL)
	case err != io.EOF:
		return time.Time{}, nil, fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	// Nothing may follow the record: read what is left through a limit
	// of 0, which fails on a byte rather than expanding it.
	if _, err := io.Copy(io.Discard, wire.LimitReader(zr, 0)); err != nil {
		return time.Time{}, nil, fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	if rd.Len() != 0 {
		return time.Time{}, nil, fmt.Errorf("record of %.100q: %d bytes after its gzip member", h.URL, rd.Len())
	}
	hd := rec.Header
	when, err := time.Parse(time.RFC3339Nano, hd.Get("Warc-Date"))
	typ := hd.Get("Warc-Type")
	revisit := revisits && typ == "revisit"
	switch {
	case typ != "response" && typ != "resource" && !revisit:
		want := "response or resource"
		if revisits {
			want += " or revisit"
		}
		return time.Time{}, nil, fmt.Errorf("record of %.100q: type %.20q, want %s", h.URL, typ, want)
	case revisit && hd.Get("Warc-Profile") != archive.RevisitProfile && hd.Get("Warc-Profile") != archive.NotModifiedProfile:
		return time.Time{}, nil, fmt.Errorf("record of %.100q: revisit profile %.100q", h.URL, hd.Get("Warc-Profile"))
	case hd.Get("Warc-Target-Uri") != h.URL:
		return time.Time{}, nil, fmt.Errorf("record of %.100q: target %.100q", h.URL, hd.Get("Warc-Target-Uri"))
	case err != nil || !when.Equal(h.Time):
		return time.Time{}, nil, fmt.Errorf("record of %.100q: date %.40q, want %s", h.URL, hd.Get("Warc-Date"), h.Time.Format(time.RFC3339Nano))
	case !digestIs(hd.Get("Warc-Block-Digest"), id.Sum(rec.Block)):
		return time.Time{}, nil, fmt.Errorf("record of %.100q: block digest mismatch", h.URL)
	case !digestIs(hd.Get("Warc-Payload-Digest"), h.Digest):
		return time.Time{}, nil, fmt.Errorf("record of %.100q: payload digest is not the header's", h.URL)
	case revisit:
		// No payload to check; the version it refers to is by its date.
		ref, err := time.Parse(time.RFC3339Nano, hd.Get("Warc-Refers-To-Date"))
		if err != nil || hd.Get("Warc-Refers-To-Target-Uri") != h.URL {
			return time.Time{}, nil, fmt.Errorf("record of %.100q: revisit refers to %.100q at %.40q", h.URL, hd.Get("Warc-Refers-To-Target-Uri"), hd.Get("Warc-Refers-To-Date"))
		}
		return ref, hd, nil
	}
	if typ == "resource" { // a screenshot: the block is the payload
		if id.Sum(rec.Block) != h.Digest {
			return time.Time{}, nil, fmt.Errorf("record of %.100q: payload digest mismatch", h.URL)
		}
		return time.Time{}, hd, nil
	}
	i := bytes.Index(rec.Block, []byte("\r\n\r\n"))
	if i < 0 || id.Sum(rec.Block[i+4:]) != h.Digest {
		return time.Time{}, nil, fmt.Errorf("record of %.100q: payload digest mismatch", h.URL)
	}
	return time.Time{}, hd, nil
}

// responseHead returns the HTTP status and media type of the response
// record in body, a gzip member checkRecord has checked.
func responseHead(body []byte) (int, string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	rec, err := archive.ReadRecordMax(bufio.NewReader(wire.LimitReader(zr, maxRecordBlock+archive.MaxHead)), maxRecordBlock)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rec.Block)), nil)
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	return resp.StatusCode, archive.MediaType(resp.Header.Get("Content-Type")), nil
}

// digestIs reports whether the WARC digest field v ("sha1:BASE32") is d.
func digestIs(v string, d id.ID) bool {
	label, val, ok := strings.Cut(v, ":")
	return ok && strings.EqualFold(label, "sha1") && strings.EqualFold(val, b32.EncodeToString(d[:]))
}

// Open reads the first record of a member's reply from r, checked
// against q and, when after is set, required to come after it; with
// verify (a remote member), each record must also pass it or is dropped
// (Member.Dropped). name names the member in errors; setRD, if set, is
// called with a read deadline before each frame.
func Open(name string, r io.Reader, setRD func(time.Time), q cdx.Query, after *archive.Cursor, verify Verifier) (*Member, error) {
	m := &Member{name: name, r: bufio.NewReader(r), setRD: setRD, q: q, verify: verify}
	if after != nil {
		m.last, m.hasLast, m.after = *after, true, after
	}
	if err := m.next(); err != nil {
		return nil, err
	}
	return m, nil
}

// Done reports whether the member's reply ended, all of it merged.
func (m *Member) Done() bool { return m.done }

var _ Exporter = (*archive.Store)(nil)
