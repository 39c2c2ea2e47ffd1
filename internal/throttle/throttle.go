package throttle

import (
	"context"
	"fmt"
	"io"

	"golang.org/x/time/rate"
)

// Burst bounds, in bytes: a bucket holds a quarter second of its rate,
// at least MinBurst (so that small caps still move whole packets) and at
// most MaxBurst (so that a large cap does not let seconds of traffic
// through at once).
const (
	MinBurst = 16 << 10
	MaxBurst = 1 << 20
)

// Limiter caps the bytes per second of the streams wrapped with it. The
// nil Limiter is unlimited.
type Limiter struct {
	bps int64
	l   *rate.Limiter
}

// New returns a limiter of bytesPerSec bytes per second, or nil (no
// limit) when bytesPerSec is 0. A negative rate is an error.
func New(bytesPerSec int64) (*Limiter, error) {
	switch {
	case bytesPerSec < 0:
		return nil, fmt.Errorf("throttle: negative rate %d bytes/s", bytesPerSec)
	case bytesPerSec == 0:
		return nil, nil
	}
	burst := min(max(bytesPerSec/4, MinBurst), MaxBurst)
	return &Limiter{bps: bytesPerSec, l: rate.NewLimiter(rate.Limit(bytesPerSec), int(burst))}, nil
}

// Rate returns the limit in bytes per second; 0 for the nil Limiter.
func (l *Limiter) Rate() int64 {
	if l == nil {
		return 0
	}
	return l.bps
}

// chunk is the most bytes one Read or Write may move at once through all
// of lims: the smallest burst, or n when nothing limits.
func chunk(n int, lims []*Limiter) int {
	for _, l := range lims {
		if l != nil {
			n = min(n, l.l.Burst())
		}
	}
	return n
}

// wait takes n bytes from every limiter of lims.
func wait(ctx context.Context, n int, lims []*Limiter) error {
	for _, l := range lims {
		if l == nil || n == 0 {
			continue
		}
		if err := l.l.WaitN(ctx, n); err != nil {
			if ctx.Err() == nil {
				if _, ok := ctx.Deadline(); ok {
					// The wait would outlast the deadline: rate says so at once.
					return fmt.Errorf("throttle: %w (%v)", context.DeadlineExceeded, err)
				}
			}
			return fmt.Errorf("throttle: %w", err)
		}
	}
	return nil
}

// active drops the nil limiters; it returns nil when none is left.
func active(lims []*Limiter) []*Limiter {
	var out []*Limiter
	for _, l := range lims {
		if l != nil {
			out = append(out, l)
		}
	}
	return out
}

// Reader returns r throttled by every limiter of lims (nil ones are
// skipped); r itself when none limits.
func Reader(ctx context.Context, r io.Reader, lims ...*Limiter) io.Reader {
	lims = active(lims)
	if len(lims) == 0 {
		return r
	}
	return &reader{ctx: ctx, r: r, lims: lims}
}

type reader struct {
	ctx  context.Context
	r    io.Reader
	lims []*Limiter
}

func (t *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return t.r.Read(p)
	}
	n, err := t.r.Read(p[:chunk(len(p), t.lims)])
	if werr := wait(t.ctx, n, t.lims); werr != nil && err == nil {
		err = werr
	}
	return n, err
}

// Writer returns w throttled by every limiter of lims (nil ones are
// skipped); w itself when none limits.
func Writer(ctx context.Context, w io.Writer, lims ...*Limiter) io.Writer {
	lims = active(lims)
	if len(lims) == 0 {
		return w
	}
	return &writer{ctx: ctx, w: w, lims: lims}
}

type writer struct {
	ctx  context.Context
	w    io.Writer
	lims []*Limiter
}

func (t *writer) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		c := chunk(len(p), t.lims)
		if err := wait(t.ctx, c, t.lims); err != nil {
			return written, err
		}
		n, err := t.w.Write(p[:c])
		written += n
		if err != nil {
			return written, err
		}
		p = p[c:]
	}
	return written, nil
}
