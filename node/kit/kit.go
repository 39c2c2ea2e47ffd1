package kit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Defaults of a Spec's zero fields.
const (
	DefaultDeadline  = 30 * time.Second
	DefaultMaxActive = 64
)

// ErrBadFrame marks a request that broke its protocol's limits or did not
// parse: the kit counts it (Config.BadFrame) and resets the stream.
var ErrBadFrame = errors.New("kit: bad request frame")

// errTooMuch is the read error past Spec.MaxRequest.
var errTooMuch = fmt.Errorf("%w: request larger than its protocol allows", wire.ErrTooLarge)

// Config is what a Kit needs of its node. Host and Gate must be set.
type Config struct {
	Host host.Host
	// Gate returns the verified ring member a stream comes from, or an
	// error if its peer is none (member.Gate.Member).
	Gate func(s network.Stream) (ring.Node, error)
	// RefuseRole counts and logs a member's request outside its role
	// (member.Gate.RefuseRole); nil counts nothing.
	RefuseRole func(m ring.Node, proto string, err error)
	// BadFrame counts a request that did not parse; nil counts nothing.
	BadFrame func()
	// Base is the context handlers run under: the node's, which ends when
	// it closes; nil means context.Background.
	Base   func() context.Context
	Logger *slog.Logger // nil discards
}

// Spec declares a protocol: its handler and its limits.
type Spec struct {
	ID protocol.ID
	// Handle serves one request. A nil return closes the stream; an
	// error resets it, and one wrapping ErrBadFrame (every failed Read of
	// Request does) is counted as a bad frame.
	Handle func(ctx context.Context, q *Request) error
	// MaxFrame bounds one frame of a request (Request.ReadFrame). It must
	// be set.
	MaxFrame int
	// MaxRequest bounds the bytes a handler reads from its stream in all;
	// zero means MaxFrame plus a frame header.
	MaxRequest int64
	// Deadline bounds the exchange, from the moment the peer passed the
	// gate; zero means DefaultDeadline.
	Deadline time.Duration
	// Streaming marks a handler that streams a long reply and moves the
	// stream's deadline itself: its context then ends only with the node.
	Streaming bool
	// MaxActive bounds the handlers of this protocol running at once on
	// this node; zero means DefaultMaxActive.
	MaxActive int
	// MaxPerPeer bounds the handlers of this protocol one member runs at
	// once here (its other streams wait, as past MaxActive), so that no
	// member holds every slot; zero means half of MaxActive (at least 1).
	MaxPerPeer int
	// Session marks a protocol whose streams may carry one request after
	// another (a Pool's Exchange): Handle reads exactly one request and
	// writes exactly one reply, without closing the stream, and the kit
	// waits up to SessionIdle for the next request on it, which passes
	// every step again (gate, slot, deadline, MaxRequest). The stream is
	// closed when the peer closes its side (a client that sends one
	// request and closes its side, as every client did before sessions,
	// is served as before), goes quiet, or has MaxIdleSessions streams of
	// the protocol waiting here already, and when MaxIdle streams of the
	// protocol wait here, all members together. Not with Streaming.
	Session bool
	// MaxIdle bounds the session streams of this protocol waiting here
	// between requests, all members together, so that they leave room
	// under the host's stream limit of the protocol for new streams; zero
	// means MaxActive/2 (at least 1).
	MaxIdle int
}

// SessionIdle is how long a session stream waits here for its next
// request before the kit closes it: longer than a Pool keeps a stream
// (PoolIdle), so that a client never reuses a stream the kit is closing.
const SessionIdle = 30 * time.Second

// MaxIdleSessions bounds the session streams of one protocol that one
// member keeps waiting here between requests: each holds a goroutine and
// a read buffer. It is twice what a Pool keeps, because all of a burst's
// streams wait here a moment before the Pool closes those it does not
// keep: a stream the kit closed while the Pool kept it costs the next
// exchange a second try.
const MaxIdleSessions = 16

// Stats counts what the kit refused or caught, every protocol together.
type Stats struct {
	Busy   int64 // streams reset after waiting for a slot until their deadline
	Panics int64 // handlers that panicked
}

// Kit registers a node's protocol handlers (Handle) and applies the
// limits of each to every stream it serves.
type Kit struct {
	cfg Config

	mu    sync.Mutex
	specs map[protocol.ID]Spec

	busy, panics atomic.Int64
}

// New returns a Kit for the node cfg describes.
func New(cfg Config) *Kit {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Base == nil {
		cfg.Base = context.Background
	}
	return &Kit{cfg: cfg, specs: map[protocol.ID]Spec{}}
}

// Stats returns the kit's counters.
func (k *Kit) Stats() Stats { return Stats{Busy: k.busy.Load(), Panics: k.panics.Load()} }

// Handle registers sp on the host. It refuses a Spec without an id, a
// handler or a frame limit, and a protocol registered before.
func (k *Kit) Handle(sp Spec) error {
	if sp.ID == "" || sp.Handle == nil || sp.MaxFrame <= 0 {
		return fmt.Errorf("kit: protocol %q: id, handler and frame limit are required", sp.ID)
	}
	if sp.MaxRequest <= 0 {
		sp.MaxRequest = int64(sp.MaxFrame) + 10
	}
	if sp.Deadline <= 0 {
		sp.Deadline = DefaultDeadline
	}
	if sp.MaxActive <= 0 {
		sp.MaxActive = DefaultMaxActive
	}
	if sp.MaxPerPeer <= 0 {
		sp.MaxPerPeer = max(sp.MaxActive/2, 1)
	}
	if sp.MaxIdle <= 0 {
		sp.MaxIdle = max(sp.MaxActive/2, 1)
	}
	if sp.Session && sp.Streaming {
		return fmt.Errorf("kit: protocol %s: a session protocol cannot stream its replies", sp.ID)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, dup := k.specs[sp.ID]; dup {
		return fmt.Errorf("kit: protocol %s registered twice", sp.ID)
	}
	k.specs[sp.ID] = sp
	slots := newSlots(sp)
	k.cfg.Host.SetStreamHandler(sp.ID, func(s network.Stream) { k.serve(sp, slots, s) })
	return nil
}

// slots are a protocol's handler slots: MaxActive in all, MaxPerPeer a
// member.
type slots struct {
	all     chan struct{}
	perPeer int
	mu      sync.Mutex
	peers   map[peer.ID]*peerSlots // members with a stream served or waiting
	idle    map[peer.ID]int        // session streams waiting for their next request, per member
	idleAll int                    // and all members together
	maxIdle int                    // at most Spec.MaxIdle of them
}

type peerSlots struct {
	held  chan struct{}
	users int // streams served or waiting
}

func newSlots(sp Spec) *slots {
	return &slots{all: make(chan struct{}, sp.MaxActive), perPeer: sp.MaxPerPeer, peers: map[peer.ID]*peerSlots{},
		idle: map[peer.ID]int{}, maxIdle: sp.MaxIdle}
}

// waitIdle takes one of p's idle-session places, or reports that p has
// MaxIdleSessions streams waiting already, or the protocol maxIdle;
// doneIdle gives it back.
func (sl *slots) waitIdle(p peer.ID) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.idle[p] >= MaxIdleSessions || sl.idleAll >= sl.maxIdle {
		return false
	}
	sl.idle[p]++
	sl.idleAll++
	return true
}

func (sl *slots) doneIdle(p peer.ID) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.idleAll--
	if sl.idle[p]--; sl.idle[p] <= 0 {
		delete(sl.idle, p)
	}
}

// acquire waits, until timeout fires, for one of p's slots and then one
// of all; it returns the release, or false on the timeout.
func (sl *slots) acquire(p peer.ID, timeout <-chan time.Time) (func(), bool) {
	sl.mu.Lock()
	ps := sl.peers[p]
	if ps == nil {
		ps = &peerSlots{held: make(chan struct{}, sl.perPeer)}
		sl.peers[p] = ps
	}
	ps.users++
	sl.mu.Unlock()
	leave := func() {
		sl.mu.Lock()
		if ps.users--; ps.users == 0 {
			delete(sl.peers, p)
		}
		sl.mu.Unlock()
	}
	select {
	case ps.held <- struct{}{}:
	case <-timeout:
		leave()
		return nil, false
	}
	select {
	case sl.all <- struct{}{}:
	case <-timeout:
		<-ps.held
		leave()
		return nil, false
	}
	return func() {
		<-sl.all
		<-ps.held
		leave()
	}, true
}

// Restore sets the host's handler of the registered protocol id again,
// with fresh slots: for tests that replace a node's handler with a
// hostile one and then put the node's back.
func (k *Kit) Restore(id protocol.ID) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	sp, ok := k.specs[id]
	if !ok {
		return fmt.Errorf("kit: protocol %s not registered", id)
	}
	slots := newSlots(sp)
	k.cfg.Host.SetStreamHandler(sp.ID, func(s network.Stream) { k.serve(sp, slots, s) })
	return nil
}

// MustHandle is Handle for a node's fixed protocols, whose Specs are
// right by construction: it panics on an error.
func (k *Kit) MustHandle(sp Spec) {
	if err := k.Handle(sp); err != nil {
		panic(err)
	}
}

// Remove stops serving p: its streams are refused by the host from then
// on, and it may be registered again.
func (k *Kit) Remove(p protocol.ID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cfg.Host.RemoveStreamHandler(p)
	delete(k.specs, p)
}

// Registered returns the protocols registered through k, sorted.
func (k *Kit) Registered() []protocol.ID {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]protocol.ID, 0, len(k.specs))
	for p := range k.specs {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Limits returns the Spec registered for p, with its defaults filled in.
func (k *Kit) Limits(p protocol.ID) (Spec, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	sp, ok := k.specs[p]
	return sp, ok
}

// serve runs one stream of sp through the kit's steps (doc.go): one
// request, or with Spec.Session one request after another.
func (k *Kit) serve(sp Spec, sl *slots, s network.Stream) {
	defer func() {
		if v := recover(); v != nil {
			k.panics.Add(1)
			k.cfg.Logger.Error("protocol handler panicked; stream reset", "protocol", string(sp.ID),
				"peer", s.Conn().RemotePeer(), "panic", v, "stack", string(debug.Stack()))
			_ = s.Reset()
		}
	}()
	ls := &limitedStream{Stream: s, left: sp.MaxRequest}
	br := bufio.NewReader(ls)
	for first := true; ; first = false {
		if !first && !k.nextRequest(sl, s, ls, br, sp.MaxRequest) {
			return
		}
		if !k.serveOne(sp, sl, s, ls, br) {
			return
		}
		if !sp.Session {
			_ = s.Close()
			return
		}
	}
}

// nextRequest waits, on a session stream whose last request was
// answered, for the first byte of the next one. It closes the stream and
// returns false when the peer closed its side, stayed quiet for
// SessionIdle, or no idle place is left (slots.waitIdle).
func (k *Kit) nextRequest(sl *slots, s network.Stream, ls *limitedStream, br *bufio.Reader, maxRequest int64) bool {
	p := s.Conn().RemotePeer()
	if !sl.waitIdle(p) {
		_ = s.Close()
		return false
	}
	defer sl.doneIdle(p)
	_ = s.SetDeadline(time.Time{})
	_ = s.SetReadDeadline(time.Now().Add(SessionIdle))
	// The next request's bytes count against a MaxRequest of its own
	// (what the buffer read ahead of it counted against the last one).
	ls.left = maxRequest
	if _, err := br.Peek(1); err != nil {
		_ = s.Close()
		return false
	}
	return true
}

// serveOne serves one request of sp on s: the gate, a slot, the deadline,
// the handler. It reports whether the stream is still open (the handler
// succeeded); otherwise it reset the stream.
func (k *Kit) serveOne(sp Spec, sl *slots, s network.Stream, ls *limitedStream, br *bufio.Reader) bool {
	log := func() *slog.Logger {
		return k.cfg.Logger.With("protocol", string(sp.ID), "peer", s.Conn().RemotePeer())
	}
	m, err := k.cfg.Gate(s)
	if err != nil {
		_ = s.Reset()
		return false
	}
	deadline := time.Now().Add(sp.Deadline)
	_ = s.SetDeadline(deadline)
	wait := time.NewTimer(sp.Deadline)
	release, ok := sl.acquire(s.Conn().RemotePeer(), wait.C)
	wait.Stop()
	if !ok {
		k.busy.Add(1)
		log().Debug("protocol busy: stream reset")
		_ = s.Reset()
		return false
	}
	defer release()
	base := k.cfg.Base()
	var ctx context.Context
	var cancel context.CancelFunc
	if sp.Streaming {
		ctx, cancel = context.WithCancel(base)
	} else {
		ctx, cancel = context.WithDeadline(base, deadline)
	}
	defer cancel()
	q := &Request{Member: m, kit: k, spec: &sp, s: ls, r: br}
	err = sp.Handle(ctx, q)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrBadFrame):
		if k.cfg.BadFrame != nil {
			k.cfg.BadFrame()
		}
		log().Debug("bad request", "err", err)
	default:
		log().Debug("request failed", "err", err)
	}
	_ = s.Reset()
	return false
}

// limitedStream is a stream whose reads stop, with an error, after its
// protocol's MaxRequest bytes.
type limitedStream struct {
	network.Stream
	left int64
}

func (l *limitedStream) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errTooMuch
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.Stream.Read(p)
	l.left -= int64(n)
	return n, err
}

var _ io.Reader = (*limitedStream)(nil)
