package p2phost_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/p2phost"
	"github.com/herod-archive/herod/ring"
)

const echo = "/herod/test-echo/1.0.0"

// serveEcho answers each frame with itself; with once it serves one
// request per stream, as a node that predates stream reuse.
func serveEcho(once bool) network.StreamHandler {
	return func(s network.Stream) {
		defer s.Close()
		r := bufio.NewReader(s)
		for first := true; first || (!once && p2phost.NextRequest(s, r, time.Minute)); first = false {
			b, err := wire.ReadFrame(r, 1<<10)
			if err != nil {
				return
			}
			if string(b) == "refuse" {
				b = []byte("refused")
			}
			if err := wire.WriteFrame(s, b); err != nil {
				return
			}
		}
	}
}

func call(pool *p2phost.Pool, c ring.Contact, msg string) error {
	return pool.Do(context.Background(), c, echo, func(s network.Stream, r *bufio.Reader) error {
		if err := wire.WriteFrame(s, []byte(msg)); err != nil {
			return err
		}
		b, err := wire.ReadFrame(r, 1<<10)
		if err != nil {
			return err
		}
		if string(b) == "refused" {
			return fmt.Errorf("%w: refused", p2phost.ErrAnswered)
		}
		if string(b) != msg {
			return fmt.Errorf("echo %q, want %q", b, msg)
		}
		return nil
	})
}

func TestPoolReusesStreams(t *testing.T) {
	for _, once := range []bool{false, true} {
		t.Run(fmt.Sprintf("once=%v", once), func(t *testing.T) {
			hs := p2ptest.Hosts(t, 2)
			hs[1].SetStreamHandler(echo, serveEcho(once))
			pool := p2phost.NewPool(p2ptest.Opener(hs[0]), time.Minute)
			defer pool.Close()
			c := ring.Contact{Peer: hs[1].ID().String()}
			for i := range 5 {
				if err := call(pool, c, fmt.Sprint("hello ", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := call(pool, c, "refuse"); !errors.Is(err, p2phost.ErrAnswered) {
				t.Fatalf("refused request: %v, want ErrAnswered", err)
			}
			st := pool.Stats()
			want := p2phost.PoolStats{Opened: 1, Reused: 5}
			if once {
				// Every reuse fails and is sent again on a new stream.
				want = p2phost.PoolStats{Opened: 6, Reused: 5, Retried: 5}
			}
			if st != want {
				t.Errorf("stats %+v, want %+v", st, want)
			}
		})
	}
}
