package crawl

// Requeues reports whether the day's re-queue may queue the known URL u
// again: this node owns it (Config.Owns, when set) and the scope it runs
// with now admits it (DenyHosts, AllowHosts, length, traps; not the
// dynamic rule, which u passed when it became known). The host lists are
// today's, so a node restarted with --deny-host H queues none of H's
// known URLs, and one restarted with --allow-host only those hosts'.
// newDay asks it of every known URL and every deferred one (startDay).
func (c *Crawler) Requeues(u string) bool { return c.takeStored(u) }
