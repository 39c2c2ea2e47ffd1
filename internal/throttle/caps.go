package throttle

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Caps are a node's byte-rate caps: Down and Up cap everything it
// receives and sends, ReplDown and ReplUp replication's share of them.
// The crawler reads its response bodies through Down; replication reads
// the replies it pulls through ReplDown and Down (ReplicationReader), and
// writes the replies it serves through ReplUp and Up (ReplyWriter). A nil
// limiter is no cap.
type Caps struct {
	Down, Up         *Limiter
	ReplDown, ReplUp *Limiter
}

// NewCaps builds caps of down and up bytes per second (0: no cap), of
// which replication may use the part share, in (0, 1] (at least 1 byte per
// second of a cap that is set).
func NewCaps(down, up int64, share float64) (Caps, error) {
	var c Caps
	var err error
	part := func(r int64) int64 {
		if r == 0 {
			return 0
		}
		return max(1, int64(float64(r)*share))
	}
	if c.Down, err = New(down); err != nil {
		return c, fmt.Errorf("download cap: %w", err)
	}
	if c.Up, err = New(up); err != nil {
		return c, fmt.Errorf("upload cap: %w", err)
	}
	if c.ReplDown, err = New(part(down)); err != nil {
		return c, fmt.Errorf("replication download cap: %w", err)
	}
	if c.ReplUp, err = New(part(up)); err != nil {
		return c, fmt.Errorf("replication upload cap: %w", err)
	}
	return c, nil
}

// ReplicationReader returns r, a replication reply being pulled,
// throttled by ReplDown and Down.
func (c Caps) ReplicationReader(ctx context.Context, r io.Reader) io.Reader {
	return Reader(ctx, r, c.ReplDown, c.Down)
}

// DeadlineWriter is a stream with a write deadline (a libp2p stream).
type DeadlineWriter interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// ReplyWriter returns the writer a replication reply of size bytes is
// written to s through: throttled by ReplUp and Up, with the stream's
// write deadline moved out to timeout plus the time the caps need for
// size bytes, so that a version file larger than timeout's worth of the
// cap still gets through. With neither cap set it returns s as it is.
func (c Caps) ReplyWriter(s DeadlineWriter, size int, timeout time.Duration) io.Writer {
	slowest := c.ReplUp.Rate()
	if r := c.Up.Rate(); r > 0 && (slowest == 0 || r < slowest) {
		slowest = r
	}
	if slowest == 0 {
		return s
	}
	extra := time.Duration(float64(size) / float64(slowest) * float64(time.Second))
	_ = s.SetWriteDeadline(time.Now().Add(timeout + extra))
	return Writer(context.Background(), s, c.ReplUp, c.Up)
}
