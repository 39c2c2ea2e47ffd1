package gateway

import (
	"errors"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// A reply is written under a progress deadline rather than one fixed
// total: before each piece of at most writeChunk bytes the connection's
// write deadline moves to now + Limits.WriteProgress. A reader that takes
// a 9 MiB page at a few KiB/s gets all of it; one that stops reading is
// dropped after WriteProgress, and its connection closed.

// writeChunk is the largest piece written under one deadline.
const writeChunk = 64 << 10

// deadlineWriter is the http.ResponseWriter handlers see: it moves the
// write deadline before every piece it writes.
type deadlineWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	progress time.Duration
	ok       bool          // the connection accepts deadlines
	stalls   *atomic.Int64 // counts readers dropped for missing a deadline
}

// newDeadlineWriter wraps w. The first deadline gives the handler
// prepare (Archive calls bounded by Config.Timeout) plus one progress
// period before anything must have been written; it also replaces the
// deadline a previous request left on a kept-alive connection.
func newDeadlineWriter(w http.ResponseWriter, progress, prepare time.Duration, stalls *atomic.Int64) *deadlineWriter {
	d := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), progress: progress, stalls: stalls}
	err := d.rc.SetWriteDeadline(time.Now().Add(prepare + progress))
	d.ok = err == nil
	return d
}

// Write writes p in pieces, each under a fresh deadline.
func (d *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), writeChunk)
		if d.ok {
			_ = d.rc.SetWriteDeadline(time.Now().Add(d.progress))
		}
		m, err := d.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			if d.ok && errors.Is(err, os.ErrDeadlineExceeded) {
				d.stalls.Add(1)
				d.ok = false // the connection is closed: no further deadline
			}
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// Flush sends what is buffered, under a fresh deadline.
func (d *deadlineWriter) Flush() {
	if d.ok {
		_ = d.rc.SetWriteDeadline(time.Now().Add(d.progress))
	}
	_ = d.rc.Flush()
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
