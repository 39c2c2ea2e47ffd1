package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/herod-archive/herod/archive"
)

// Streamer is implemented by archives that can read a capture's payload
// as a stream from their own files (archive.Store.OpenBody). The gateway
// then serves a raw (id_) reply, or a large reply it does not rewrite, of
// a capture held there straight from the file: neither held whole nor
// spooled.
type Streamer interface {
	// StreamAt opens the payload of the capture of url that Get would
	// serve for t, when this archive holds it in its own files. An error
	// wrapping archive.ErrNotStreamable means it does not, or cannot
	// stream it, which it finds without asking other nodes when it holds
	// no version of url: the gateway then reads it with Get.
	StreamAt(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Body, error)
}

// streamCharge is the least one streamed reply is charged to
// Limits.MemoryBudget: its decompressor and buffers (archive.Body.Held,
// if more) and the reply's own.
const streamCharge = 256 << 10

// serveStreamed serves the replay t from a Streamer when the capture it
// selects is held in the archive's own files, is at least
// Limits.SpoolThreshold bytes and is served as it is (raw, or a type the
// gateway does not rewrite, not gzip-encoded, not a redirect). It reports
// whether it answered; when it did not, nothing was written. A URL hinted
// small is not tried, nor, but raw, one whose capture was last found of
// a type the gateway rewrites.
func (s *Server) serveStreamed(ctx context.Context, w http.ResponseWriter, r *http.Request, t Target, ui string) bool {
	st, ok := s.cfg.Archive.(Streamer)
	if !ok || s.lim.SpoolThreshold < 0 || s.hints.small(t.URL) {
		return false
	}
	raw := t.Mod == ModRaw
	if !raw && s.rewrites.has(t.URL) {
		return false
	}
	v, b, err := st.StreamAt(ctx, t.URL, t.Time)
	if err != nil {
		if !errors.Is(err, archive.ErrNotStreamable) && !errors.Is(err, archive.ErrNotFound) {
			s.log.Warn("gateway: stream", "url", t.URL, "err", err)
		}
		return false // Get answers, with its own error if any
	}
	mt := mediaType(v.ContentType)
	if !raw && (mt == "" || scriptedDocument(mt) || mt == "text/css" || scriptMedia[mt]) {
		s.rewrites.add(t.URL) // not asked again for its rewritten replays
		b.Close()
		return false
	}
	if b.Size < s.lim.SpoolThreshold || (b.Status >= 300 && b.Status < 400) {
		b.Close()
		return false
	}
	defer b.Close()
	head, err := b.Peek(2)
	if err != nil {
		s.log.Warn("gateway: stream", "url", t.URL, "err", err)
		return false
	}
	gz := gzipEncoded(b.Header, head)
	if gz && !raw {
		return false // decoded for the reader: Get's path
	}
	hold := &held{b: s.mem}
	if !hold.grow(ctx, max(streamCharge, b.Held), s.lim.BusyWait) {
		setContentHeaders(w.Header(), ui, true)
		s.busy(w, r, "memory")
		return true
	}
	defer hold.done()
	s.hints.note(t.URL, b.Size)
	h := w.Header()
	copyHeaders(h, b.Header)
	s.mementoHeaders(h, ui, t.URL, v.Time)
	ctype := b.Header.Get("Content-Type")
	if ctype == "" {
		ctype = v.ContentType
	}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	setContentHeaders(h, ui, true)
	if executable(t.URL, mediaType(ctype)) {
		setDownload(h, t.URL)
	}
	status := b.Status
	if status < 200 || status > 599 {
		status = http.StatusOK
	}
	s.stats.replays.Add(1)
	s.stats.streamed.Add(1)
	h.Set("Content-Length", strconv.FormatInt(b.Size, 10))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return true
	}
	// A plain Reader: io.Copy writes through the response, and its
	// deadlines, in pieces of its own buffer.
	if _, err := io.Copy(w, struct{ io.Reader }{b}); errors.Is(err, archive.ErrCorrupt) {
		// A damaged record: the reply is cut short of its length,
		// which the reader sees as a failed transfer.
		s.log.Warn("gateway: stream", "url", t.URL, "err", err)
	}
	return true
}

// urlSet remembers up to maxHints URLs.
type urlSet struct{ h sizeHints }

func (u *urlSet) has(url string) bool {
	u.h.mu.Lock()
	defer u.h.mu.Unlock()
	_, ok := u.h.m[url]
	return ok
}

func (u *urlSet) add(url string) { u.h.note(url, 0) }
