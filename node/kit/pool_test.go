package kit

import (
	"bufio"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// opener opens a's streams to b, counting them.
func (tk *testKit) opener(opened *atomic.Int64) Opener {
	return func(ctx context.Context, _ ring.Contact, p protocol.ID) (network.Stream, error) {
		tk.a.Peerstore().AddAddrs(tk.b.ID(), tk.b.Addrs(), peerstore.TempAddrTTL)
		s, err := tk.a.NewStream(ctx, tk.b.ID(), p)
		if err == nil {
			opened.Add(1)
		}
		return s, err
	}
}

// ask sends one frame through x and returns the reply frame.
func (tk *testKit) ask(x Exchanger, msg string) (string, error) {
	var got []byte
	err := x(context.Background(), ring.Contact{Peer: tk.b.ID().String()}, testProto, func(s network.Stream, r *bufio.Reader) error {
		if err := wire.WriteFrame(s, []byte(msg)); err != nil {
			return err
		}
		var err error
		got, err = wire.ReadFrame(r, 1<<10)
		return err
	})
	return string(got), err
}

// askEach sends n requests through pool one after another, each
// answered with itself.
func (tk *testKit) askEach(t *testing.T, pool *Pool, n int) {
	t.Helper()
	for i := range n {
		msg := fmt.Sprint("request ", i)
		if got, err := tk.ask(pool.Exchange, msg); err != nil || got != msg {
			t.Fatalf("exchange %d: %q, %v", i, got, err)
		}
	}
}

// TestSessionPool: a pool's exchanges share one stream, each request
// passing the kit's steps (a peer no longer a member is refused on the
// open stream); a client that closes its side after one request, as
// before sessions, is served; a kept stream the other end closed is
// replaced and the exchange sent again.
func TestSessionPool(t *testing.T) {
	tk := newTestKit(t)
	var served atomic.Int64
	tk.k.MustHandle(Spec{ID: testProto, MaxFrame: 100, MaxRequest: 110, Session: true,
		Handle: func(ctx context.Context, q *Request) error { served.Add(1); return echo(ctx, q) }})
	var opened atomic.Int64
	pool := NewPool(tk.opener(&opened), 10*time.Second)
	defer pool.Close()
	tk.askEach(t, pool, 20)
	if n := opened.Load(); n != 1 {
		t.Errorf("20 exchanges one after another opened %d streams, want 1", n)
	}
	if st := pool.Stats(); st.Opened != 1 || st.Reused != 19 {
		t.Errorf("pool stats %+v, want 1 opened, 19 reused", st)
	}
	// Each request of a session is a request of its own: MaxRequest (110)
	// bounds one, not the 20 × 10 bytes the stream carried.
	if served.Load() != 20 || tk.bad.Load() != 0 {
		t.Errorf("served %d, bad frames %d", served.Load(), tk.bad.Load())
	}

	// A client of before: one request, then its side closed.
	if got, err := tk.call([]byte("old client")); err != nil || string(got) != "old client" {
		t.Fatalf("one-request client: %q, %v", got, err)
	}

	// Concurrent exchanges each get a stream; the pool keeps maxPooled.
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			msg := fmt.Sprint("parallel ", i)
			if got, err := tk.ask(pool.Exchange, msg); err != nil || got != msg {
				t.Errorf("parallel exchange: %q, %v", got, err)
			}
		})
	}
	wg.Wait()
	pool.mu.Lock()
	kept := 0
	for _, l := range pool.idle {
		kept += len(l)
	}
	pool.mu.Unlock()
	if kept > maxPooled {
		t.Errorf("pool keeps %d streams, at most %d", kept, maxPooled)
	}

	// The gate runs for each request: a peer no longer a member is
	// refused on its open stream, and the pool's second try too.
	tk.member.Store(false)
	if _, err := tk.ask(pool.Exchange, "refused"); err == nil {
		t.Fatal("a former member's request on an open session was served")
	}
	tk.member.Store(true)
	pool.mu.Lock()
	clear(pool.noSession) // the refusal above stopped keeping b's streams for a while
	pool.mu.Unlock()

	// A kept stream the other end reset is replaced: the exchange goes
	// out again on a new stream.
	if _, err := tk.ask(pool.Exchange, "warm"); err != nil {
		t.Fatal(err)
	}
	pool.mu.Lock()
	for _, l := range pool.idle {
		for _, ps := range l {
			_ = ps.s.Reset()
		}
	}
	pool.mu.Unlock()
	before := pool.Stats().Retried
	if got, err := tk.ask(pool.Exchange, "after reset"); err != nil || got != "after reset" {
		t.Fatalf("exchange after the kept stream broke: %q, %v", got, err)
	}
	if pool.Stats().Retried != before+1 {
		t.Errorf("retried %d, want %d", pool.Stats().Retried, before+1)
	}
}

// TestSessionPoolOldServer: a server that closes each stream after its
// reply (a protocol without Session, as every node ran before sessions)
// answers every exchange; the pool stops keeping its streams.
func TestSessionPoolOldServer(t *testing.T) {
	tk := newTestKit(t)
	tk.k.MustHandle(Spec{ID: testProto, MaxFrame: 100, Handle: echo})
	var opened atomic.Int64
	pool := NewPool(tk.opener(&opened), 10*time.Second)
	defer pool.Close()
	tk.askEach(t, pool, 10)
	if st := pool.Stats(); st.Retried > 1 || opened.Load() != 10-st.Reused+st.Retried {
		t.Errorf("stats %+v, %d opened: want at most one retry, then a stream each", st, opened.Load())
	}
}

// TestSessionIdleBound: a member's session streams waiting between
// requests are at most MaxIdleSessions; the kit closes the others after
// their reply.
func TestSessionIdleBound(t *testing.T) {
	tk := newTestKit(t)
	tk.k.MustHandle(Spec{ID: testProto, MaxFrame: 100, Session: true, Handle: echo})
	var streams []network.Stream
	for range MaxIdleSessions + 3 {
		s, err := tk.a.NewStream(context.Background(), tk.b.ID(), testProto)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.SetDeadline(time.Now().Add(10 * time.Second))
		if err := wire.WriteFrame(s, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := wire.ReadFrame(bufio.NewReader(s), 10); err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	// The kit closed the streams past the bound: their next read ends;
	// the others wait for a next request (until the resets below).
	ended := make(chan struct{}, len(streams))
	for _, s := range streams {
		go func() {
			_, _ = s.Read(make([]byte, 1))
			ended <- struct{}{}
		}()
	}
	closed := 0
	late := time.After(5 * time.Second)
wait:
	for closed < len(streams) {
		select {
		case <-ended:
			closed++
		case <-late:
			break wait
		}
		if closed == 3 {
			// A fourth close, if any, would come now.
			select {
			case <-ended:
				closed++
			case <-time.After(300 * time.Millisecond):
			}
			break wait
		}
	}
	for _, s := range streams {
		_ = s.Reset()
	}
	if closed != 3 {
		t.Errorf("%d streams closed by the kit, want 3 (the ones past %d)", closed, MaxIdleSessions)
	}
}
