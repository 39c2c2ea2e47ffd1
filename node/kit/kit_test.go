package kit

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

const testProto protocol.ID = "/herod/test/1.0.0"

// testKit serves on b, admitting a's streams when member is set.
type testKit struct {
	a, b          host.Host
	k             *Kit
	member        atomic.Bool
	bad, refusals atomic.Int64
}

func newTestKit(t *testing.T) *testKit {
	hs := p2ptest.Hosts(t, 2)
	tk := &testKit{a: hs[0], b: hs[1]}
	tk.member.Store(true)
	tk.k = New(Config{Host: tk.b,
		Gate: func(s network.Stream) (ring.Node, error) {
			if !tk.member.Load() {
				return ring.Node{}, errors.New("not a member")
			}
			return ring.Node{Contact: ring.Contact{Peer: s.Conn().RemotePeer().String()}}, nil
		},
		BadFrame:   func() { tk.bad.Add(1) },
		RefuseRole: func(ring.Node, string, error) { tk.refusals.Add(1) },
	})
	return tk
}

// call sends frames on testProto and returns the reply frame.
func (tk *testKit) call(frames ...[]byte) ([]byte, error) {
	s, err := tk.a.NewStream(context.Background(), tk.b.ID(), testProto)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	for _, f := range frames {
		if err := wire.WriteFrame(s, f); err != nil {
			return nil, err
		}
	}
	_ = s.CloseWrite()
	return wire.ReadFrame(bufio.NewReader(s), 1<<20)
}

// echo answers each frame's length, and refuses "role" as outside the
// sender's role; "panic" panics.
func echo(_ context.Context, q *Request) error {
	b, err := q.ReadFrame(0)
	if err != nil {
		return err
	}
	switch string(b) {
	case "panic":
		panic("handler bug")
	case "role":
		q.Refuse(errors.New("outside the sender's role"))
	}
	return wire.WriteFrame(q.Stream(), b)
}

// TestKitSteps: a member is served; a non-member's stream is reset
// before the handler runs; a frame over MaxFrame, and a request over
// MaxRequest, are bad frames; a role refusal is counted; a panic resets
// the stream and the node goes on.
func TestKitSteps(t *testing.T) {
	tk := newTestKit(t)
	var ran atomic.Int64
	tk.k.MustHandle(Spec{ID: testProto, MaxFrame: 100, MaxRequest: 150, Handle: func(ctx context.Context, q *Request) error {
		ran.Add(1)
		if err := echo(ctx, q); err != nil {
			return err
		}
		if _, err := q.ReadFrame(0); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}})
	if err := tk.k.Handle(Spec{ID: testProto, MaxFrame: 1, Handle: echo}); err == nil {
		t.Fatal("a protocol registered twice")
	}
	if got, err := tk.call([]byte("hello")); err != nil || string(got) != "hello" {
		t.Fatalf("member: %q, %v", got, err)
	}
	if _, err := tk.call(make([]byte, 101)); err == nil || tk.bad.Load() != 1 {
		t.Fatalf("frame over MaxFrame: %v, bad frames %d", err, tk.bad.Load())
	}
	// Two frames of 90: the second passes MaxFrame but not MaxRequest
	// (the reset it brings may overtake the reply to the first).
	_, _ = tk.call(make([]byte, 90), make([]byte, 90))
	testwait.For(t, "two bad frames counted", 10*time.Second, func() bool { return tk.bad.Load() == 2 })
	if _, err := tk.call([]byte("role")); err != nil || tk.refusals.Load() != 1 {
		t.Fatalf("role refusal: %v, counted %d", err, tk.refusals.Load())
	}
	if _, err := tk.call([]byte("panic")); err == nil || tk.k.Stats().Panics != 1 {
		t.Fatalf("panic: %v, counted %d", err, tk.k.Stats().Panics)
	}
	before := ran.Load()
	tk.member.Store(false)
	if _, err := tk.call([]byte("hello")); err == nil || ran.Load() != before {
		t.Fatalf("non-member: %v, handler ran %d times", err, ran.Load()-before)
	}
	if got := tk.k.Registered(); len(got) != 1 || got[0] != testProto {
		t.Fatalf("registered %q", got)
	}
}

// TestKitSlotsAndDeadline: past MaxActive a stream waits for a slot and
// is reset at its deadline; a handler's context ends at the deadline.
func TestKitSlotsAndDeadline(t *testing.T) {
	tk := newTestKit(t)
	release := make(chan struct{})
	var inside sync.WaitGroup
	inside.Add(1)
	var ctxEnded atomic.Bool
	tk.k.MustHandle(Spec{ID: testProto, MaxFrame: 10, MaxActive: 1, Deadline: 300 * time.Millisecond,
		Handle: func(ctx context.Context, q *Request) error {
			inside.Done()
			<-release
			<-ctx.Done()
			ctxEnded.Store(true)
			return nil
		}})
	first := make(chan error, 1)
	go func() { _, err := tk.call([]byte("a")); first <- err }()
	inside.Wait()
	if _, err := tk.call([]byte("b")); err == nil {
		t.Fatal("a stream over MaxActive was served")
	}
	if tk.k.Stats().Busy != 1 {
		t.Fatalf("busy %d, want 1", tk.k.Stats().Busy)
	}
	close(release)
	<-first
	testwait.For(t, "the handler's context ended", 10*time.Second, ctxEnded.Load)
}

// TestKitPerPeerShare: one member holds at most MaxPerPeer of a
// protocol's slots (its other streams wait); another member is served
// while the first holds its share.
func TestKitPerPeerShare(t *testing.T) {
	hs := p2ptest.Hosts(t, 3)
	hog, other, srv := hs[0], hs[1], hs[2]
	k := New(Config{Host: srv, Gate: func(s network.Stream) (ring.Node, error) {
		return ring.Node{Contact: ring.Contact{Peer: s.Conn().RemotePeer().String()}}, nil
	}})
	release := make(chan struct{})
	var running, most atomic.Int64
	k.MustHandle(Spec{ID: testProto, MaxFrame: 10, MaxActive: 4, Deadline: 20 * time.Second,
		Handle: func(_ context.Context, q *Request) error {
			b, err := q.ReadFrame(0)
			if err != nil {
				return err
			}
			if string(b) == "hold" {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-release
				running.Add(-1)
			}
			return wire.WriteFrame(q.Stream(), b)
		}})
	if sp, _ := k.Limits(testProto); sp.MaxPerPeer != 2 {
		t.Fatalf("MaxPerPeer defaults to %d, want half of MaxActive", sp.MaxPerPeer)
	}
	call := func(h host.Host, msg string) error {
		s, err := h.NewStream(context.Background(), srv.ID(), testProto)
		if err != nil {
			return err
		}
		defer s.Close()
		_ = s.SetDeadline(time.Now().Add(20 * time.Second))
		if err := wire.WriteFrame(s, []byte(msg)); err != nil {
			return err
		}
		_ = s.CloseWrite()
		_, err = wire.ReadFrame(bufio.NewReader(s), 100)
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- call(hog, "hold") })
	}
	testwait.For(t, "the member's share of slots taken", 10*time.Second, func() bool { return running.Load() == 2 })
	start := time.Now()
	if err := call(other, "quick"); err != nil {
		t.Fatalf("another member while one holds its share: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("another member waited %v", took)
	}
	if n := running.Load(); n != 2 {
		t.Errorf("%d of one member's streams run at once, want its share of 2", n)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a waiting stream of the member: %v", err)
		}
	}
	if m := most.Load(); m != 2 {
		t.Errorf("at most %d of one member's streams ran at once, want 2", m)
	}
}
