package crawl

// Host scheduling. Every host with pending URLs has a hostState in the
// scheduler. At most MaxActiveHosts of them run a loop (runHost); the
// others wait in line, first come first served. A loop that finishes its
// host, or yields after a batch because others wait, hands its turn to
// the head of the line.
//
// sched is the state machine; each transition returns the hosts whose
// loop must start now, and the Crawler starts them (goHost). It holds no
// lock and no clock: the Crawler guards it with c.mu, and pacing is the
// HostBudget's (over Config.Clock). A host loop's own choice when it has
// read everything is idleStep, a pure function.

// hostState is the bookkeeping of one host with pending work.
type hostState struct {
	gen      uint64        // bumped whenever entries are added for the host
	running  bool          // a loop runs for it (else it waits in line)
	inflight int           // fetches of the running loop not finished
	wake     chan struct{} // (buffered 1) entries added or a fetch finished
}

// signal wakes the host's loop if it waits; it never blocks.
func (h *hostState) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// sched is the host scheduler's state: the hosts with pending work, how
// many run a loop (at most max), and the line of those waiting for one.
// It is not safe for concurrent use.
type sched struct {
	max     int
	hosts   map[string]*hostState
	waiting []string // hosts waiting for a loop, FIFO
	running int      // host loops running
}

func newSched(max int) *sched {
	return &sched{max: max, hosts: make(map[string]*hostState)}
}

// wake records entries added for host. A host already scheduled has its
// generation bumped and its loop signalled; a new one runs at once while
// loops are free (start) or joins the line.
func (s *sched) wake(host string) (h *hostState, start bool) {
	if h, ok := s.hosts[host]; ok {
		h.gen++
		h.signal()
		return h, false
	}
	h = &hostState{wake: make(chan struct{}, 1)}
	s.hosts[host] = h
	if s.running < s.max {
		s.run(h)
		return h, true
	}
	s.waiting = append(s.waiting, host)
	return h, false
}

func (s *sched) run(h *hostState) {
	h.running = true
	s.running++
}

// done retires the loop of a host with nothing pending (or whose queue
// failed: its entries stay for the next Add or Start) and, when open,
// returns the waiting hosts that take the freed loop.
func (s *sched) done(host string, open bool) []string {
	delete(s.hosts, host)
	s.running--
	return s.next(open)
}

// yield sends running host h to the back of the line and, when open,
// returns the waiting hosts that take the freed loop.
func (s *sched) yield(host string, h *hostState, open bool) []string {
	h.running = false
	s.running--
	s.waiting = append(s.waiting, host)
	return s.next(open)
}

// next starts waiting hosts while loops are free, unless the crawler is
// closing (open false), and returns them.
func (s *sched) next(open bool) []string {
	if !open {
		return nil
	}
	var started []string
	for s.running < s.max && len(s.waiting) > 0 {
		host := s.waiting[0]
		s.waiting[0] = ""
		s.waiting = s.waiting[1:]
		if h, ok := s.hosts[host]; ok && !h.running {
			s.run(h)
			started = append(started, host)
		}
	}
	return started
}

// othersWaiting reports whether hosts wait for a loop.
func (s *sched) othersWaiting() bool { return len(s.waiting) > 0 }

// idle is a host loop's choice when its read found nothing.
type idle uint8

const (
	idleReread idle = iota // entries were added (or a new day began): read again
	idleRewind             // read once more from the start of the host's queue
	idleLeave              // nothing pending and nothing in flight: the loop ends
	idleWait               // wait for new entries or the fetches in flight
)

// idleStep decides what a host loop whose read found nothing does:
// added reports entries added (or a new day) since the read, inflight
// the loop's fetches not finished, fromStart that the read began at the
// start of the host's queue.
func idleStep(added bool, inflight int, fromStart bool) idle {
	switch {
	case added:
		return idleReread
	case inflight == 0 && !fromStart:
		// Concurrent adds commit out of order, so an entry may sit behind
		// the cursor (a lower sequence number written after a higher one
		// was read). Nothing of this host is in flight, so every entry
		// still queued is undispatched: read once more from the start
		// before leaving.
		return idleRewind
	case inflight == 0:
		return idleLeave
	}
	return idleWait
}

// wakeLocked makes sure host gets a loop, now or when its turn comes.
func (c *Crawler) wakeLocked(host string) {
	if !c.started || c.closed || c.ctx.Err() != nil {
		return
	}
	if h, start := c.sched.wake(host); start {
		c.goHost(host, h)
	}
}

// openLocked reports whether new host loops may start.
func (c *Crawler) openLocked() bool { return !c.closed && c.ctx.Err() == nil }

// goHost starts the loop of host, which the scheduler set running.
func (c *Crawler) goHost(host string, h *hostState) {
	c.wg.Add(1)
	go c.runHost(host, h)
}

// startLocked starts the loops of hosts the scheduler let run.
func (c *Crawler) startLocked(hosts []string) {
	for _, host := range hosts {
		c.goHost(host, c.sched.hosts[host])
	}
}

// doneLocked retires the loop of a host with nothing pending (or whose
// queue failed: its entries stay for the next Add or Start).
func (c *Crawler) doneLocked(host string) {
	c.startLocked(c.sched.done(host, c.openLocked()))
}

// yieldLocked sends a running host to the back of the line.
func (c *Crawler) yieldLocked(host string, h *hostState) {
	c.startLocked(c.sched.yield(host, h, c.openLocked()))
}

// othersWaiting reports whether hosts wait for a loop.
func (c *Crawler) othersWaiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sched.othersWaiting()
}
