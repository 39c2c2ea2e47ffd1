package node

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
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

// exportKey is a position in export order, the order of archive.Export:
// host, URL, capture time, payload digest.
type exportKey struct {
	host, url string
	t         time.Time
	d         id.ID
}

func (k exportKey) compare(o exportKey) int {
	if c := strings.Compare(k.host, o.host); c != 0 {
		return c
	}
	if c := strings.Compare(k.url, o.url); c != 0 {
		return c
	}
	if c := k.t.Compare(o.t); c != 0 {
		return c
	}
	return k.d.Cmp(o.d)
}

// exactCursor is the archive's exact cursor of a record.
func exactCursor(u string, t time.Time, d id.ID) string {
	return u + " " + t.Format(time.RFC3339Nano) + " " + d.String()
}

// lowerHost is the host of u as the archive orders it.
func lowerHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.ToLower(p.Host)
}

// parseResume reads a resume cursor in either form gateway.ParseCursor
// accepts. The Wayback form resumes after every record of its URL up to
// the end of its second, as archive.Export does.
func parseResume(c string) (exportKey, error) {
	u, t, err := gateway.ParseCursor(c)
	if err != nil {
		return exportKey{}, err
	}
	k := exportKey{host: lowerHost(u), url: u, t: t}
	if rest := c[len(u)+1:]; len(rest) == 14 {
		k.t = t.Add(time.Second - 1)
		for i := range k.d {
			k.d[i] = 0xff
		}
	} else {
		d, err := id.Parse(rest[strings.LastIndexByte(rest, ' ')+1:])
		if err != nil {
			return exportKey{}, fmt.Errorf("cursor digest: %w", err)
		}
		k.d = d
	}
	return k, nil
}

// deadlineWriter extends the write deadline of a stream before each write,
// so a long export is bounded per frame, not as a whole.
type deadlineWriter struct{ s network.Stream }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.s.SetWriteDeadline(time.Now().Add(exportIdle))
	return w.s.Write(p)
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
	if f.pending.Len()+len(p) > maxBodyFrame {
		f.err = fmt.Errorf("record larger than %d bytes", maxBodyFrame)
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
	k, err := parseResume(cursor)
	if err != nil {
		f.err = fmt.Errorf("export cursor %.100q: %w", cursor, err)
		return
	}
	h := recordHeader{URL: k.url, Time: k.t, Digest: k.d, Cursor: cursor}
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

// serveExport answers op "export" from the local store, writing the reply
// frames to w.
func (n *Node) serveExport(ctx context.Context, req queryRequest, w io.Writer) error {
	f := &recordFramer{w: bufio.NewWriterSize(w, 64<<10)}
	end := recordHeader{End: true}
	if _, err := gatewayQuery(req.Query); err != nil {
		end.Error = err.Error()
	} else {
		st, err := n.store.Export(ctx, archive.ExportOptions{Query: req.Query, Revisits: req.Revisits, After: req.After, Progress: f.progress}, f, nil)
		if f.err != nil {
			return f.err // the stream is broken: nothing more can be sent
		}
		end.Skipped = len(st.Corrupt)
		if err != nil {
			end.Error = err.Error()
		}
	}
	if err := wire.WriteJSON(f.w, end); err != nil {
		return err
	}
	return f.w.Flush()
}

// memberExport reads one member's export reply and checks every record
// before it is merged: the header must match the query, come strictly
// after the previous one (and after the resume cursor), and the body must
// be one gzip member holding one WARC response record (or, when the query
// asked for them, a revisit record) whose target URI, date and digests
// agree with the header.
type memberExport struct {
	name    string // member address, for errors
	r       *bufio.Reader
	setRD   func(time.Time) // read deadline per frame; nil for a local pipe
	q       gateway.Query
	last    exportKey
	hasLast bool

	head    recordHeader // current record
	key     exportKey
	body    []byte
	done    bool
	skipped int // corrupt files the member reported at the end
}

// next reads the member's next record into head, key and body, or sets
// done at the end of a complete reply.
func (m *memberExport) next() error {
	if m.setRD != nil {
		m.setRD(time.Now().Add(exportIdle))
	}
	var h recordHeader
	if err := wire.ReadJSON(m.r, maxRequestFrame, &h); err != nil {
		return fmt.Errorf("member %s: export header: %w", m.name, err)
	}
	if h.End {
		if h.Error != "" {
			return fmt.Errorf("member %s: export: %w: %.300s", m.name, errRemote, h.Error)
		}
		m.done, m.skipped = true, max(h.Skipped, 0)
		return nil
	}
	k := exportKey{host: lowerHost(h.URL), url: h.URL, t: h.Time, d: h.Digest}
	switch {
	case !m.q.Contains(archive.Version{URL: h.URL, Time: h.Time}):
		return fmt.Errorf("member %s: %w: record of %.100q outside the query", m.name, errBadReply, h.URL)
	case h.Cursor != exactCursor(h.URL, h.Time, h.Digest):
		return fmt.Errorf("member %s: %w: cursor %.100q does not match its record", m.name, errBadReply, h.Cursor)
	case m.hasLast && k.compare(m.last) <= 0:
		return fmt.Errorf("member %s: %w: record of %.100q out of order", m.name, errBadReply, h.URL)
	}
	body, err := wire.ReadFrame(m.r, maxBodyFrame)
	if err != nil {
		return fmt.Errorf("member %s: export record: %w", m.name, err)
	}
	if err := checkRecord(body, h, m.q.Revisits); err != nil {
		return fmt.Errorf("member %s: %w: %w", m.name, errBadReply, err)
	}
	m.head, m.key, m.body = h, k, body
	m.last, m.hasLast = k, true
	return nil
}

// b32 is the digest encoding of WARC-*-Digest fields.
var b32 = base32.StdEncoding

// checkRecord verifies that body is exactly one gzip member holding one
// WARC response record of h's URL, time and payload digest, whose block
// and payload digests hold. With revisits it also accepts a revisit record
// of the identical-payload-digest profile: its block (the HTTP head, no
// payload) must match its block digest and its payload digest must be
// the header's, the digest of the version it refers to, which cannot be
// checked here without that version.
func checkRecord(body []byte, h recordHeader, revisits bool) error {
	rd := bytes.NewReader(body)
	zr, err := gzip.NewReader(rd)
	if err != nil {
		return fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	zr.Multistream(false)
	br := bufio.NewReader(zr)
	rec, err := archive.ReadRecord(br)
	if err != nil {
		return fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	switch _, err := br.Peek(1); {
	case err == nil:
		return fmt.Errorf("record of %.100q: more than one record in its gzip member", h.URL)
	case err != io.EOF:
		return fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return fmt.Errorf("record of %.100q: %w", h.URL, err)
	}
	if rd.Len() != 0 {
		return fmt.Errorf("record of %.100q: %d bytes after its gzip member", h.URL, rd.Len())
	}
	hd := rec.Header
	when, err := time.Parse(time.RFC3339Nano, hd.Get("Warc-Date"))
	typ := hd.Get("Warc-Type")
	revisit := revisits && typ == "revisit"
	switch {
	case typ != "response" && !revisit:
		want := "response"
		if revisits {
			want += " or revisit"
		}
		return fmt.Errorf("record of %.100q: type %.20q, want %s", h.URL, typ, want)
	case revisit && hd.Get("Warc-Profile") != archive.RevisitProfile && hd.Get("Warc-Profile") != archive.NotModifiedProfile:
		return fmt.Errorf("record of %.100q: revisit profile %.100q", h.URL, hd.Get("Warc-Profile"))
	case hd.Get("Warc-Target-Uri") != h.URL:
		return fmt.Errorf("record of %.100q: target %.100q", h.URL, hd.Get("Warc-Target-Uri"))
	case err != nil || !when.Equal(h.Time):
		return fmt.Errorf("record of %.100q: date %.40q, want %s", h.URL, hd.Get("Warc-Date"), h.Time.Format(time.RFC3339Nano))
	case !digestIs(hd.Get("Warc-Block-Digest"), id.Sum(rec.Block)):
		return fmt.Errorf("record of %.100q: block digest mismatch", h.URL)
	case !digestIs(hd.Get("Warc-Payload-Digest"), h.Digest):
		return fmt.Errorf("record of %.100q: payload digest is not the header's", h.URL)
	case revisit:
		return nil // no payload to check
	}
	i := bytes.Index(rec.Block, []byte("\r\n\r\n"))
	if i < 0 || id.Sum(rec.Block[i+4:]) != h.Digest {
		return fmt.Errorf("record of %.100q: payload digest mismatch", h.URL)
	}
	return nil
}

// digestIs reports whether the WARC digest field v ("sha1:BASE32") is d.
func digestIs(v string, d id.ID) bool {
	label, val, ok := strings.Cut(v, ":")
	return ok && strings.EqualFold(label, "sha1") && strings.EqualFold(val, b32.EncodeToString(d[:]))
}

// openExport starts member c's export of q after the cursor after and
// reads its first record. For this node it runs the export in a goroutine
// feeding a pipe, so both cases share the checks of memberExport. The
// returned stop function releases the stream and must be called.
func (n *Node) openExport(ctx context.Context, c ring.Contact, q gateway.Query, req queryRequest, after *exportKey) (*memberExport, func(), error) {
	m := &memberExport{name: c.Addr, q: q}
	if after != nil {
		m.last, m.hasLast = *after, true
	}
	var stop func()
	if c.Peer == n.self.Peer {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			pw.CloseWithError(n.serveExport(ctx, req, pw))
		}()
		stop = func() {
			pr.CloseWithError(errExportStopped)
			<-done
		}
		m.name, m.r = "self", bufio.NewReader(pr)
	} else {
		s, err := n.openStream(ctx, c, queryProtocol)
		if err != nil {
			return nil, func() {}, fmt.Errorf("member %s: %w", c.Addr, err)
		}
		stop = func() {
			if m.done {
				_ = s.Close()
			} else {
				_ = s.Reset()
			}
		}
		_ = s.SetDeadline(time.Time{})
		_ = s.SetWriteDeadline(time.Now().Add(streamTimeout))
		if err := wire.WriteJSON(s, req); err != nil {
			return nil, stop, fmt.Errorf("member %s: export request: %w", c.Addr, err)
		}
		_ = s.CloseWrite()
		m.r = bufio.NewReader(s)
		m.setRD = func(t time.Time) { _ = s.SetReadDeadline(t) }
	}
	if err := m.next(); err != nil {
		return nil, stop, err
	}
	return m, stop, nil
}

// errExportStopped ends a local member's export when the merge stops.
var errExportStopped = errors.New("node: export stopped")

// exportHeap orders the members' current records.
type exportHeap []*memberExport

func (h exportHeap) Len() int           { return len(h) }
func (h exportHeap) Less(i, j int) bool { return h[i].key.compare(h[j].key) < 0 }
func (h exportHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *exportHeap) Push(x any)        { *h = append(*h, x.(*memberExport)) }
func (h *exportHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Export implements gateway.Exporter; see ExportProgress.
func (r *resolver) Export(ctx context.Context, q gateway.Query, w io.Writer, resumeAfter string) error {
	return r.ExportProgress(ctx, q, w, resumeAfter, nil)
}

// ExportProgress implements gateway.ProgressExporter. It opens an export
// stream to every real node of the ring (this one included), each sorted
// in the archive's export order (host, URL, capture time, digest), and
// merges them into one .warc.gz in that global order, dropping a record
// equal to the one just written (a replica). Every record is checked
// before it is written (see memberExport). After each record it calls
// progress, if non-nil, with the record's exact cursor; resuming after it
// gives exactly the rest of the stream, since every member skips up to
// the same cursor in the same order.
//
// Partial failure is never silent: if the ring cannot be enumerated
// completely, or a member cannot be reached, fails, or breaks the
// protocol, ExportProgress stops and returns an error naming the member
// (wrapping errPartial). What was written before is a correct prefix of
// the full export, so the gateway ends the response with its
// Herod-Export-Status "error" trailer (or a 502 if nothing was written)
// and the client resumes from the last cursor once the member is back.
func (r *resolver) ExportProgress(ctx context.Context, q gateway.Query, w io.Writer, resumeAfter string, progress func(cursor string)) error {
	n := (*Node)(r)
	req := queryRequest{Op: "export", Query: archiveQuery(q), After: resumeAfter, Revisits: q.Revisits}
	if _, err := gatewayQuery(req.Query); err != nil {
		return fmt.Errorf("node export: %w", err)
	}
	var after *exportKey
	if resumeAfter != "" {
		k, err := parseResume(resumeAfter)
		if err != nil {
			return fmt.Errorf("node export: %w", err)
		}
		after = &k
	}
	ms, err := n.members(ctx)
	if err != nil {
		return fmt.Errorf("node export: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		opened []*memberExport
		stops  []func()
		errs   []error
		wg     sync.WaitGroup
		sem    = make(chan struct{}, queryFanout)
	)
	defer func() {
		cancel()
		for _, stop := range stops {
			stop()
		}
	}()
	for _, c := range ms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m, stop, err := n.openExport(ctx, c, q, req, after)
			mu.Lock()
			defer mu.Unlock()
			stops = append(stops, stop)
			switch {
			case err != nil:
				errs = append(errs, err)
			default:
				opened = append(opened, m)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("node export: %w: %w", errPartial, errors.Join(errs...))
	}
	if err := mergeExports(opened, w, progress); err != nil {
		return fmt.Errorf("node export: %w", err)
	}
	return nil
}

// mergeExports writes the records of the members, each positioned on its
// first record or done, in global export order, dropping a record equal to
// the one just written (the same version held by two members). It calls
// progress, if non-nil, with each written record's cursor. A member's
// failure stops the merge with an error wrapping errPartial.
//
// Versions a member skipped as corrupt are reported once the merge is
// done, as an error wrapping errPartial: the stream is then complete but
// for them.
func mergeExports(all []*memberExport, w io.Writer, progress func(cursor string)) error {
	var h exportHeap
	for _, m := range all {
		if !m.done {
			h = append(h, m)
		}
	}
	heap.Init(&h)
	var last exportKey
	wrote := false
	for h.Len() > 0 {
		m := h[0]
		if !wrote || m.key.compare(last) != 0 {
			if _, err := w.Write(m.body); err != nil {
				return err
			}
			last, wrote = m.key, true
			if progress != nil {
				progress(m.head.Cursor)
			}
		}
		if err := m.next(); err != nil {
			return fmt.Errorf("%w: %w", errPartial, err)
		}
		if m.done {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	var errs []error
	for _, m := range all {
		if m.skipped > 0 {
			errs = append(errs, fmt.Errorf("member %s left out %d corrupt version files", m.name, m.skipped))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", errPartial, errors.Join(errs...))
	}
	return nil
}

var _ gateway.ProgressExporter = (*resolver)(nil)
