package throttle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"
)

// TestRates moves 1 MiB through readers and writers under several caps in
// a synctest bubble (fake time) and checks the elapsed time against the
// cap: a full bucket lets one burst through at once, the rest moves at
// the rate.
func TestRates(t *testing.T) {
	const size = 1 << 20
	for _, tc := range []struct {
		name  string
		rates []int64 // the stream passes through each
		write bool
	}{
		{"read 256KiB/s", []int64{256 << 10}, false},
		{"write 256KiB/s", []int64{256 << 10}, true},
		{"read 100KB/s", []int64{100_000}, false},
		{"write through 1MiB/s and 128KiB/s", []int64{1 << 20, 128 << 10}, true},
		{"read through 64KiB/s and 512KiB/s", []int64{64 << 10, 512 << 10}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var lims []*Limiter
				slowest, burst := tc.rates[0], int64(0)
				for _, r := range tc.rates {
					l, err := New(r)
					if err != nil {
						t.Fatal(err)
					}
					lims = append(lims, l)
					if r <= slowest {
						slowest, burst = r, int64(l.l.Burst())
					}
				}
				src := bytes.Repeat([]byte{'x'}, size)
				var dst bytes.Buffer
				start := time.Now()
				var err error
				if tc.write {
					_, err = io.Copy(Writer(context.Background(), &dst, lims...), bytes.NewReader(src))
				} else {
					_, err = io.Copy(&dst, Reader(context.Background(), bytes.NewReader(src), lims...))
				}
				if err != nil {
					t.Fatal(err)
				}
				if dst.Len() != size {
					t.Fatalf("moved %d bytes, want %d", dst.Len(), size)
				}
				got := time.Since(start)
				want := time.Duration(float64(size-burst) / float64(slowest) * float64(time.Second))
				if got < want-time.Second/10 || got > want+time.Second/2 {
					t.Errorf("%d bytes took %v at %d B/s, want about %v", size, got, slowest, want)
				}
			})
		})
	}
}

// TestUnlimited checks that a zero rate is no limiter and that nil
// limiters leave streams unwrapped.
func TestUnlimited(t *testing.T) {
	l, err := New(0)
	if err != nil || l != nil {
		t.Fatalf("New(0) = %v, %v; want nil, nil", l, err)
	}
	if l.Rate() != 0 {
		t.Errorf("nil Rate = %d", l.Rate())
	}
	r := bytes.NewReader(nil)
	if Reader(context.Background(), r, nil, l) != io.Reader(r) {
		t.Error("Reader wrapped a stream no limiter limits")
	}
	var w bytes.Buffer
	if Writer(context.Background(), &w) != io.Writer(&w) {
		t.Error("Writer wrapped a stream no limiter limits")
	}
	if _, err := New(-1); err == nil {
		t.Error("New(-1) accepted a negative rate")
	}
}

// TestCancel checks that a wait ends with the context's error.
func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(MinBurst) // one burst a second
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		_, err := io.Copy(Writer(ctx, io.Discard, l), bytes.NewReader(make([]byte, 10*MinBurst)))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the deadline", err)
		}
	})
}

// TestShared checks that two streams on one limiter share its rate.
func TestShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, size = 128 << 10, 512 << 10
		l, _ := New(rate)
		start := time.Now()
		done := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := io.Copy(io.Discard, Reader(context.Background(), bytes.NewReader(make([]byte, size)), l))
				done <- err
			}()
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		want := time.Duration(float64(2*size-l.l.Burst()) / rate * float64(time.Second))
		if got := time.Since(start); got < want-time.Second/10 || got > want+time.Second/2 {
			t.Errorf("two streams took %v, want about %v", got, want)
		}
	})
}

// TestCaps: replication's share of each cap, at least 1 byte a second,
// and no share of a cap that is not set.
func TestCaps(t *testing.T) {
	c, err := NewCaps(1000, 0, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if c.Down.Rate() != 1000 || c.ReplDown.Rate() != 250 || c.Up != nil || c.ReplUp != nil {
		t.Fatalf("caps %d/%d/%d/%d", c.Down.Rate(), c.ReplDown.Rate(), c.Up.Rate(), c.ReplUp.Rate())
	}
	if c, err = NewCaps(3, 3, 0.1); err != nil || c.ReplDown.Rate() != 1 || c.ReplUp.Rate() != 1 {
		t.Fatalf("tiny caps: %v %d/%d", err, c.ReplDown.Rate(), c.ReplUp.Rate())
	}
	if _, err := NewCaps(-1, 0, 0.5); err == nil {
		t.Fatal("a negative cap was accepted")
	}
}

// deadlineBuffer is a DeadlineWriter that records its deadline.
type deadlineBuffer struct {
	bytes.Buffer
	dl time.Time
}

func (d *deadlineBuffer) SetWriteDeadline(t time.Time) error { d.dl = t; return nil }

// TestReplyWriter: with no cap the stream itself, untouched; with one,
// the deadline moves out by the time the slowest cap needs for the reply.
func TestReplyWriter(t *testing.T) {
	var s deadlineBuffer
	if w := (Caps{}).ReplyWriter(&s, 1<<20, time.Second); w != io.Writer(&s) || !s.dl.IsZero() {
		t.Fatalf("uncapped: %T, deadline %v", w, s.dl)
	}
	c, err := NewCaps(0, 1<<20, 0.5) // replication may send 512 KiB/s
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.ReplyWriter(&s, 1<<20, time.Second) // 2 s at 512 KiB/s, plus 1 s
	if d := s.dl.Sub(start); d < 3*time.Second || d > 4*time.Second {
		t.Fatalf("deadline in %v, want 3 s", d)
	}
}
