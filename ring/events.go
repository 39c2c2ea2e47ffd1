package ring

import (
	"sync"
	"sync/atomic"

	"github.com/herod-archive/herod/internal/id"
)

// EventKind says what changed.
type EventKind uint8

// Event kinds.
const (
	// RangeChanged: a local vnode's predecessor changed (a node joined in
	// front of it, its predecessor died or left), so the key range it owns
	// moved from OldRange to NewRange.
	RangeChanged EventKind = iota + 1
	// SuccessorsChanged: a local vnode's successor list changed (a
	// successor joined, died or left); replicas may need to move.
	SuccessorsChanged
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case RangeChanged:
		return "range-changed"
	case SuccessorsChanged:
		return "successors-changed"
	}
	return "unknown"
}

// Range is the key range (Start, End] that a vnode owns. Known is false
// while the vnode's predecessor is unknown; such a vnode owns nothing.
// Start == End with Known means the whole circle.
type Range struct {
	Start id.ID `json:"start"`
	End   id.ID `json:"end"`
	Known bool  `json:"known"`
}

// Contains reports whether key is in the range.
func (g Range) Contains(key id.ID) bool { return g.Known && id.InHalfOpen(key, g.Start, g.End) }

// Event is a change of a local vnode's routing state, delivered to
// subscribers after the change is made.
type Event struct {
	Kind          EventKind `json:"kind"`
	Vnode         Node      `json:"vnode"`
	OldRange      Range     `json:"old_range"`
	NewRange      Range     `json:"new_range"`
	OldSuccessors []Node    `json:"old_successors,omitempty"`
	NewSuccessors []Node    `json:"new_successors,omitempty"`
}

// Subscription receives ring events on C until Unsubscribe or the ring's
// Close, which close C. When the buffer is full the oldest undelivered
// event is dropped (counted in Dropped); the latest state is always
// available from Ring.Status.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	bus     *eventBus
	dropped atomic.Uint64
}

// Dropped returns how many events were dropped because C was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Unsubscribe stops delivery and closes C.
func (s *Subscription) Unsubscribe() { s.bus.remove(s) }

type eventBus struct {
	mu     sync.Mutex
	subs   []*Subscription
	closed bool
}

// Subscribe returns a subscription with a buffer of buf events (minimum 1,
// 0 means 64).
func (r *Ring) Subscribe(buf int) *Subscription {
	if buf <= 0 {
		buf = 64
	}
	c := make(chan Event, buf)
	s := &Subscription{C: c, c: c, bus: &r.events}
	r.events.mu.Lock()
	defer r.events.mu.Unlock()
	if r.events.closed {
		close(c)
		return s
	}
	r.events.subs = append(r.events.subs, s)
	return s
}

func (b *eventBus) publish(evs []Event) {
	if len(evs) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		for _, e := range evs {
			for {
				select {
				case s.c <- e:
				default:
					select {
					case <-s.c:
						s.dropped.Add(1)
					default:
					}
					continue
				}
				break
			}
		}
	}
}

func (b *eventBus) remove(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.subs {
		if x == s {
			b.subs = append(b.subs[:i], b.subs[i+1:]...)
			close(s.c)
			return
		}
	}
}

func (b *eventBus) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		close(s.c)
	}
	b.subs = nil
	b.closed = true
}
