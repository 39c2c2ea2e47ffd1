package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/herod-archive/herod/archive"
)

// How a capture's body is held. Archive.Get returns it whole, so the
// gateway bounds the bodies it holds instead: at most Limits.MaxFetches
// Get calls at once (their size is not known before they return), then
// each body is charged to Limits.MemoryBudget while the reply is
// prepared, and a reply body of Limits.SpoolThreshold bytes or more is
// written to an unlinked file and served from it, its memory released
// before the first byte reaches the reader. A slow reader then holds an
// open file, not the page.

// errBusy reports that a reply found no room within Limits.BusyWait.
var errBusy = errors.New("gateway: busy")

// rewriteFactor is the share charged for a body that is rewritten: the
// capture, its decoding and the rewritten copy.
const rewriteFactor = 3

// held is a share of the memory budget taken by one reply.
type held struct {
	b *budget
	n int64
}

// grow takes n more bytes of the budget, waiting at most wait.
func (h *held) grow(ctx context.Context, n int64, wait time.Duration) bool {
	n = h.b.charge(h.n+n) - h.n
	if n <= 0 {
		return true
	}
	if !h.b.acquire(ctx, n, wait) {
		return false
	}
	h.n += n
	return true
}

// keep shrinks the share to n bytes.
func (h *held) keep(n int64) {
	if n = h.b.charge(n); n < h.n {
		h.b.release(h.n - n)
		h.n = n
	}
}

// done releases the share.
func (h *held) done() {
	if h.n > 0 {
		h.b.release(h.n)
		h.n = 0
	}
}

// get is Archive.Get under the limits: a fetch slot (a small one for a
// URL hinted small, hints.go) while the call runs,
// then factor times the body's size charged to the budget. When the
// budget has no room at once it drops the body, frees the slot, waits
// for the room and reads the capture again. It returns errBusy when it
// finds no room within Limits.BusyWait; otherwise the caller must call
// done on the share it returns.
func (s *Server) get(ctx context.Context, url string, t time.Time, factor int64) (archive.Version, *archive.Capture, *held, error) {
	h := &held{b: s.mem}
	slots := s.fetches
	if s.hints.small(url) {
		slots = s.smallFetches
	}
	if !slots.acquire(ctx, 1, s.lim.BusyWait) {
		return archive.Version{}, nil, nil, fmt.Errorf("%w: fetches", errBusy)
	}
	v, c, err := s.cfg.Archive.Get(ctx, url, t)
	if err != nil || c == nil {
		slots.release(1)
		return v, c, nil, err
	}
	s.hints.note(url, int64(len(c.Body)))
	need := s.mem.charge(factor * int64(len(c.Body)))
	if s.mem.tryAcquire(need) {
		slots.release(1)
		h.n = need
		return v, c, h, nil
	}
	c = nil // no room: let it go while waiting
	slots.release(1)
	if !s.mem.acquire(ctx, need, s.lim.BusyWait) {
		return archive.Version{}, nil, nil, fmt.Errorf("%w: memory", errBusy)
	}
	h.n = need
	if v, c, err = s.cfg.Archive.Get(ctx, url, t); err != nil || c == nil {
		h.done()
		return v, c, nil, err
	}
	if !h.grow(ctx, factor*int64(len(c.Body))-h.n, s.lim.BusyWait) {
		h.done()
		return archive.Version{}, nil, nil, fmt.Errorf("%w: memory", errBusy)
	}
	return v, c, h, nil
}

// writeReply writes body with status, holding the share h until the body
// is off its hands: a body of SpoolThreshold bytes or more goes to a spool
// file first and is served from there, h released before the first byte
// is written, and the file shared with the readers of the same replay
// when share is not nil. h and share may be nil.
func (s *Server) writeReply(w http.ResponseWriter, r *http.Request, status int, body []byte, h *held, share *sharing) {
	if h != nil {
		defer h.done()
	}
	if r.Method == http.MethodHead || s.lim.SpoolThreshold < 0 || int64(len(body)) < s.lim.SpoolThreshold {
		if h != nil {
			h.keep(int64(len(body)))
		}
		writeBody(w, r, status, body)
		return
	}
	f, err := s.spool(body)
	if err != nil {
		// No spool (a full or read-only disk): serve from memory,
		// still charged.
		s.log.Warn("gateway: spool", "err", err)
		writeBody(w, r, status, body)
		return
	}
	n := int64(len(body))
	body = nil
	if h != nil {
		h.done()
	}
	s.stats.spooled.Add(1)
	if share != nil {
		share.publish(status, w.Header().Clone(), f, n)
		defer s.replies.release(share.e)
	} else {
		defer f.Close()
	}
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(status)
	// A SectionReader: no WriteTo, so io.Copy writes through the
	// response, and its deadlines, in pieces of its own buffer; and
	// readers of a shared file do not move each other's offset.
	_, _ = io.Copy(w, io.NewSectionReader(f, 0, n))
}

// spool writes body to an unlinked file in SpoolDir and returns it,
// positioned at its start.
func (s *Server) spool(body []byte) (*os.File, error) {
	f, err := os.CreateTemp(s.lim.SpoolDir, "herod-reply-*")
	if err != nil {
		return nil, fmt.Errorf("gateway spool: %w", err)
	}
	// Unlinked at once: the file lives as long as the reply, and no
	// crash leaves it behind.
	rmErr := os.Remove(f.Name())
	_, err = f.Write(body)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		if rmErr != nil {
			os.Remove(f.Name())
		}
		return nil, fmt.Errorf("gateway spool: %w", err)
	}
	if rmErr != nil {
		// A system that cannot remove an open file: remove it when
		// the reply is done.
		return nil, fmt.Errorf("gateway spool: %w", errors.Join(rmErr, f.Close(), os.Remove(f.Name())))
	}
	return f, nil
}
