package kit

import (
	"bufio"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/ring"
)

// An exchange is one request and its reply on a stream of a session
// protocol (Spec.Session). A stream's setup costs both ends about as
// much CPU again as a small exchange on an open stream (QUIC, or TCP
// with yamux: node/p2phost's BenchmarkSessionExchange), and a ring sends
// thousands of small requests to the same few members (claims, leases,
// robots records, link batches), so a Pool keeps a few streams to each
// member open between exchanges.

// PoolIdle is how long a Pool keeps an unused stream: shorter than
// SessionIdle, so that the serving kit never closes a stream the pool is
// about to reuse.
const PoolIdle = 10 * time.Second

// maxPooled bounds the unused streams a Pool keeps per member and
// protocol: a node's host loops claim and lease from the same member at
// once. Half of what the serving kit lets wait (MaxIdleSessions).
const maxPooled = MaxIdleSessions / 2

// noSessionFor is how long a Pool opens a stream per exchange for a
// member and protocol after a reused stream of theirs failed: a member
// that runs an older herod closes each stream after its reply, and then
// costs a second try only once in this while.
const noSessionFor = 5 * time.Second

// Opener opens a stream of protocol p to the real node behind c, with a
// deadline.
type Opener func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)

// Exchanger sends one request of protocol p to the real node behind c and
// reads its reply (Pool.Exchange). fn writes the request to s and reads
// the reply through r, all of it and no more; it must not close s. An
// error of fn resets s: fn returns one only when the stream failed or
// the reply did not parse, not when the reply reports a refusal.
type Exchanger func(ctx context.Context, c ring.Contact, p protocol.ID, fn func(s network.Stream, r *bufio.Reader) error) error

// Pool keeps streams of session protocols open between exchanges, at
// most maxPooled per member and protocol, each for at most PoolIdle. A
// Pool is safe for concurrent use.
type Pool struct {
	open    Opener
	timeout time.Duration

	mu        sync.Mutex
	idle      map[poolKey][]pooled
	noSession map[poolKey]time.Time
	swept     time.Time
	closed    bool

	opened, reused, retried atomic.Int64
}

type poolKey struct {
	peer  string
	proto protocol.ID
}

// pooled is an unused stream and the reader its replies were read
// through (which may hold nothing: a reply is read to its end).
type pooled struct {
	s     network.Stream
	r     *bufio.Reader
	since time.Time
}

// PoolStats counts a Pool's exchanges by the stream they used.
type PoolStats struct {
	Opened  int64 `json:"opened"`  // exchanges on a stream opened for them
	Reused  int64 `json:"reused"`  // exchanges on a stream kept from an earlier one
	Retried int64 `json:"retried"` // exchanges sent again on a new stream after a kept one failed
}

// NewPool returns a Pool that opens streams with open and bounds each
// exchange by timeout (or its context's deadline, when sooner).
func NewPool(open Opener, timeout time.Duration) *Pool {
	return &Pool{open: open, timeout: timeout, idle: map[poolKey][]pooled{}, noSession: map[poolKey]time.Time{}}
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	return PoolStats{Opened: p.opened.Load(), Reused: p.reused.Load(), Retried: p.retried.Load()}
}

// Exchange implements Exchanger: on a kept stream of c's node and p when
// one is there, else on a new one, which it keeps afterwards. An exchange
// that fails on a kept stream is sent once more on a new stream (the
// kept one may have been closed by the other end meanwhile), so a request
// may reach the other end twice: session protocols' requests must bear
// that (a claim is granted to the same claimer again, a link batch is
// queued once, a lease's unused slots expire).
func (p *Pool) Exchange(ctx context.Context, c ring.Contact, proto protocol.ID, fn func(s network.Stream, r *bufio.Reader) error) error {
	k := poolKey{peer: c.Peer, proto: proto}
	for attempt := 0; ; attempt++ {
		var ps pooled
		kept := false
		if attempt == 0 {
			ps, kept = p.take(k)
		}
		if !kept {
			s, err := p.open(ctx, c, proto)
			if err != nil {
				return err
			}
			ps = pooled{s: s, r: bufio.NewReader(s)}
			p.opened.Add(1)
		} else {
			p.reused.Add(1)
		}
		dl := time.Now().Add(p.timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(dl) {
			dl = d
		}
		_ = ps.s.SetDeadline(dl)
		err := fn(ps.s, ps.r)
		if err == nil {
			p.put(k, ps)
			return nil
		}
		_ = ps.s.Reset()
		if !kept || attempt > 0 || ctx.Err() != nil {
			return err
		}
		// The other end closed this stream, or restarted: the streams kept
		// with it are as stale. Keep none for a while (an older herod
		// closes each stream after its reply).
		p.mu.Lock()
		p.noSession[k] = time.Now().Add(noSessionFor)
		for _, old := range p.idle[k] {
			_ = old.s.Close()
		}
		delete(p.idle, k)
		p.mu.Unlock()
		p.retried.Add(1)
	}
}

// take returns a kept stream of k, if one is there and young enough.
func (p *Pool) take(k poolKey) (pooled, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	list := p.idle[k]
	for len(list) > 0 {
		ps := list[len(list)-1]
		list = list[:len(list)-1]
		if now.Sub(ps.since) < PoolIdle {
			p.setIdle(k, list)
			return ps, true
		}
		_ = ps.s.Close()
	}
	p.setIdle(k, list)
	return pooled{}, false
}

// put keeps ps for the next exchange of k, or closes it: the pool is
// closed or full for k, or k's member closed a kept stream lately.
func (p *Pool) put(k poolKey, ps pooled) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.sweepLocked(now)
	if until, ok := p.noSession[k]; ok && now.Before(until) || p.closed || len(p.idle[k]) >= maxPooled || ps.r.Buffered() > 0 {
		_ = ps.s.Close()
		return
	}
	ps.since = now
	p.idle[k] = append(p.idle[k], ps)
}

func (p *Pool) setIdle(k poolKey, list []pooled) {
	if len(list) == 0 {
		delete(p.idle, k)
	} else {
		p.idle[k] = list
	}
}

// sweepLocked closes, at most once per PoolIdle, every kept stream older
// than PoolIdle, and forgets lapsed noSession marks.
func (p *Pool) sweepLocked(now time.Time) {
	if now.Sub(p.swept) < PoolIdle {
		return
	}
	p.swept = now
	for k, list := range p.idle {
		fresh := list[:0]
		for _, ps := range list {
			if now.Sub(ps.since) < PoolIdle {
				fresh = append(fresh, ps)
			} else {
				_ = ps.s.Close()
			}
		}
		p.setIdle(k, fresh)
	}
	for k, until := range p.noSession {
		if now.After(until) {
			delete(p.noSession, k)
		}
	}
}

// Close closes every kept stream; later exchanges open a stream each.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for k, list := range p.idle {
		for _, ps := range list {
			_ = ps.s.Close()
		}
		delete(p.idle, k)
	}
	return nil
}

// OpenExchanger is an Exchanger without a pool: a stream of its own for
// each exchange, closed after the reply.
func OpenExchanger(open Opener) Exchanger {
	return func(ctx context.Context, c ring.Contact, p protocol.ID, fn func(s network.Stream, r *bufio.Reader) error) error {
		s, err := open(ctx, c, p)
		if err != nil {
			return err
		}
		if err := fn(s, bufio.NewReader(s)); err != nil {
			_ = s.Reset()
			return err
		}
		_ = s.Close()
		return nil
	}
}
