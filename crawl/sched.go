package crawl

// Host scheduling. Every host with pending URLs has a hostState in
// c.hosts. At most MaxActiveHosts of them run a loop (runHost); the others
// wait in c.waiting, first come first served. A loop that finishes its
// host, or yields after a batch because others wait, hands its turn to the
// head of the line. All of it is guarded by c.mu.

// hostState is the bookkeeping of one host with pending work.
type hostState struct {
	gen      uint64        // bumped whenever entries are added for the host
	running  bool          // a loop runs for it (else it waits in c.waiting)
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

// wakeLocked makes sure host gets a loop, now or when its turn comes.
func (c *Crawler) wakeLocked(host string) {
	if !c.started || c.closed || c.ctx.Err() != nil {
		return
	}
	if h, ok := c.hosts[host]; ok {
		h.gen++
		h.signal()
		return
	}
	h := &hostState{wake: make(chan struct{}, 1)}
	c.hosts[host] = h
	if c.running < c.cfg.MaxActiveHosts {
		c.runLocked(host, h)
		return
	}
	c.waiting = append(c.waiting, host)
}

func (c *Crawler) runLocked(host string, h *hostState) {
	h.running = true
	c.running++
	c.wg.Add(1)
	go c.runHost(host, h)
}

// doneLocked retires the loop of a host with nothing pending (or whose
// queue failed: its entries stay for the next Add or Start).
func (c *Crawler) doneLocked(host string) {
	delete(c.hosts, host)
	c.running--
	c.nextLocked()
}

// yieldLocked sends a running host to the back of the line.
func (c *Crawler) yieldLocked(host string, h *hostState) {
	h.running = false
	c.running--
	c.waiting = append(c.waiting, host)
	c.nextLocked()
}

// nextLocked starts waiting hosts while loops are free.
func (c *Crawler) nextLocked() {
	if c.closed || c.ctx.Err() != nil {
		return
	}
	for c.running < c.cfg.MaxActiveHosts && len(c.waiting) > 0 {
		host := c.waiting[0]
		c.waiting[0] = ""
		c.waiting = c.waiting[1:]
		if h, ok := c.hosts[host]; ok && !h.running {
			c.runLocked(host, h)
		}
	}
}

// othersWaiting reports whether hosts wait for a loop.
func (c *Crawler) othersWaiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiting) > 0
}
