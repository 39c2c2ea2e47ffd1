package p2phost

import (
	"bufio"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/ring"
)

// Streams of request-reply protocols are kept open between requests: on
// loopback a libp2p stream cost about 200 µs of CPU to open, negotiate and
// close (its yamux frames each encrypted and written on their own), more
// than the request it carried (issue 23: a ring of four nodes sent ~0.6 of
// them per page crawled). A handler serves requests on a stream until it
// ends or stays idle (NextRequest); a Pool keeps at most one idle stream
// per peer and protocol, and a request that fails on a reused stream
// (the other side closed it meanwhile, or an older node serves one
// request per stream) is sent again on a new one, so the protocols' own
// requests must be safe to repeat.

// Pool defaults.
const (
	// PoolIdle is how long a Pool keeps an unused stream; ServeIdle, how
	// long a handler waits for the next request on one. The handler
	// waits longer, so that a stream the pool hands out is seldom being
	// closed at the other end.
	PoolIdle  = 2 * time.Second
	ServeIdle = 5 * time.Second
	// maxPooled bounds the idle streams of one Pool.
	maxPooled = 64
)

// ErrAnswered wraps the error of a request whose reply was read in full
// (the other node refused it or reported an error): Pool.Do does not
// send it again, and the stream stays in step.
var ErrAnswered = errors.New("p2phost: request answered")

// Opener opens a stream of protocol p to the real node behind c, with a
// deadline.
type Opener func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)

// Pool sends requests over streams it keeps open between them. It is safe
// for concurrent use; a stream carries one request at a time.
type Pool struct {
	open    Opener
	timeout time.Duration // one request's deadline

	mu      sync.Mutex
	idle    map[poolKey]pooled
	closed  bool
	opened  int64
	reused  int64
	retried int64
}

type poolKey struct {
	peer  string
	proto protocol.ID
}

type pooled struct {
	s    network.Stream
	r    *bufio.Reader
	used time.Time
}

// PoolStats counts a Pool's streams.
type PoolStats struct {
	Opened, Reused, Retried int64
}

// NewPool returns a Pool that opens streams with open and gives each
// request timeout to complete.
func NewPool(open Opener, timeout time.Duration) *Pool {
	return &Pool{open: open, timeout: timeout, idle: make(map[poolKey]pooled)}
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Opened: p.opened, Reused: p.reused, Retried: p.retried}
}

// Do sends one request of protocol proto to the node behind c: fn writes
// it to s and reads the reply through r, which buffers s. It uses an idle
// stream when there is one, and sends the request again on a new stream
// when fn fails on a reused one (unless the error wraps ErrAnswered).
func (p *Pool) Do(ctx context.Context, c ring.Contact, proto protocol.ID, fn func(s network.Stream, r *bufio.Reader) error) error {
	k := poolKey{c.Peer, proto}
	if e, ok := p.take(k); ok {
		dl := time.Now().Add(p.timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl = d
		}
		_ = e.s.SetDeadline(dl)
		err := fn(e.s, e.r)
		if err == nil || errors.Is(err, ErrAnswered) {
			p.put(k, e)
			return err
		}
		e.s.Reset()
		if ctx.Err() != nil {
			return err
		}
		p.mu.Lock()
		p.retried++
		p.mu.Unlock()
	}
	s, err := p.open(ctx, c, proto)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.opened++
	p.mu.Unlock()
	e := pooled{s: s, r: bufio.NewReader(s)}
	err = fn(s, e.r)
	if err != nil && !errors.Is(err, ErrAnswered) {
		s.Reset()
		return err
	}
	p.put(k, e)
	return err
}

// take removes and returns k's idle stream, if it has one not idle for
// too long.
func (p *Pool) take(k poolKey) (pooled, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.idle[k]
	if !ok {
		return pooled{}, false
	}
	delete(p.idle, k)
	if time.Since(e.used) > PoolIdle {
		go e.s.Close()
		return pooled{}, false
	}
	p.reused++
	return e, true
}

// put keeps e as k's idle stream, closing the one it replaces and those
// idle for too long.
func (p *Pool) put(k poolKey, e pooled) {
	e.used = time.Now()
	var drop []network.Stream
	p.mu.Lock()
	if old, ok := p.idle[k]; ok {
		drop = append(drop, old.s)
		delete(p.idle, k)
	}
	for ok, o := range p.idle {
		if e.used.Sub(o.used) > PoolIdle {
			drop = append(drop, o.s)
			delete(p.idle, ok)
		}
	}
	if p.closed || len(p.idle) >= maxPooled {
		drop = append(drop, e.s)
	} else {
		p.idle[k] = e
	}
	p.mu.Unlock()
	for _, s := range drop {
		_ = s.Close()
	}
}

// Close closes the idle streams; later requests close their streams when
// done.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = make(map[poolKey]pooled)
	p.mu.Unlock()
	for _, e := range idle {
		_ = e.s.Close()
	}
}

// NextRequest waits up to ServeIdle for another request on s, read
// through r, and reports whether one starts; it then gives the request
// timeout to complete. A handler serves its first request and then every
// one NextRequest reports.
func NextRequest(s network.Stream, r *bufio.Reader, timeout time.Duration) bool {
	_ = s.SetReadDeadline(time.Now().Add(ServeIdle))
	if _, err := r.Peek(1); err != nil {
		return false
	}
	_ = s.SetDeadline(time.Now().Add(timeout))
	return true
}
