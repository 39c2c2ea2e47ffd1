package crawl

import (
	"errors"
	"maps"
	"time"
)

// Stats is a snapshot of a crawler's progress, for herod status and
// /api/status. Counters cover the current day: they reset at NewDay (and
// at process start).
type Stats struct {
	Day int64 `json:"day"` // current crawl day number
	// DayStarted is when this node began crawling Day (its NewDay): a
	// fetch of an earlier day that had not sent its request by then does
	// not send it, every request of an earlier day was answered before
	// it unless its answer took longer than Config.DaySwitchWait (it may then
	// reach its site after), and every request for Day went out after
	// it. Zero when the day began before the process started.
	DayStarted time.Time `json:"dayStarted,omitzero"`
	Queued     int64     `json:"queued"` // URLs waiting to be fetched
	// Paused is why the crawl sends no request now ("" when it runs):
	// Config.Paused's reason, such as "disk full".
	Paused       string `json:"paused,omitempty"`
	InFlight     int64  `json:"inFlight"`     // fetches under way
	FetchedToday int64  `json:"fetchedToday"` // requests answered by the origin today
	NewVersions  int64  `json:"newVersions"`  // versions the archive added
	NotModified  int64  `json:"notModified"`  // 304 answers
	Unchanged    int64  `json:"unchanged"`    // 200 answers whose payload equals the stored one
	Forwarded    int64  `json:"forwarded"`    // links handed to the Forwarder
	// PassedOn counts queued URLs handed to the Forwarder instead of
	// fetched because, at fetch time, this node no longer owned them.
	PassedOn     int64 `json:"passedOn"`
	BytesFetched int64 `json:"bytesFetched"` // payload bytes received (after transfer decoding)
	// ResponseSec sums, over the requests answered today, the seconds
	// from sending each request to receiving its response headers.
	ResponseSec  float64          `json:"responseSec"`
	ErrorsByKind map[string]int64 `json:"errorsByKind"` // refusals and failures by Kind*
	KnownURLs    int64            `json:"knownURLs"`    // URLs ever queued on this node
	ActiveHosts  int              `json:"activeHosts"`  // hosts being crawled (a loop each)
	WaitingHosts int              `json:"waitingHosts"` // hosts with queued URLs waiting for a loop
	// Connections counts the connections to origin servers the crawler
	// holds open now for pages (robots.txt and proxied requests aside):
	// at most 2*Concurrency (Config.Concurrency).
	Connections int64 `json:"connections"`
	// CapHeld counts, since the process started, the requests the local
	// per-host cap (HostRate, see CapBudget) held back 10 ms or more after
	// the ring-wide budget had granted them. An honest schedule causes a
	// few (a slot used late, up to half an interval, delays the next one:
	// about one request in ten in TestPoliteRing); an owner granting more
	// than HostRate makes nearly every request wait.
	CapHeld int64 `json:"capHeld"`
	// LongestQueueWait is, over the day, the longest a host loop waited
	// to read its next batch from the queue (the day's lock and the read):
	// what a rollover holding the queue costs the crawl.
	LongestQueueWait time.Duration `json:"longestQueueWait"`
	// DaySwitch is how long the switch to this day held the day's lock
	// (host loops and link intake wait for it; the day's queue was
	// written before, while the old day ran).
	DaySwitch time.Duration `json:"daySwitch"`
	// DaySwitchSendWait is how long the switch to this day held requests
	// back while the old day's on their way were answered, at most
	// Config.DaySwitchWait.
	DaySwitchSendWait time.Duration `json:"daySwitchSendWait"`
	// CopyWaits counts the new versions whose fetch waited for
	// Config.WriteCopies copies today, CopyWaitSec the seconds those
	// waits took in all (copies.go).
	CopyWaits   int64   `json:"copyWaits,omitempty"`
	CopyWaitSec float64 `json:"copyWaitSec,omitempty"`
}

// counters are the mutable day counters, guarded by Crawler.mu.
type counters struct {
	inFlight, fetched, newVersions, notModified, unchanged, forwarded, bytes int64
	passedOn                                                                 int64
	copyWaits                                                                int64         // fetches that waited for WriteCopies copies
	copyWait                                                                 time.Duration // summed time of those waits
	response                                                                 time.Duration // summed time to response headers
	errs                                                                     map[string]int64
	queueWait                                                                time.Duration // longest host-loop queue read
	daySwitch                                                                time.Duration // the switch to this day (Stats.DaySwitch)
	sendWait                                                                 time.Duration // its wait for the old day's requests (Stats.DaySwitchSendWait)
}

func (s *counters) reset() {
	inFlight := s.inFlight
	*s = counters{inFlight: inFlight, errs: make(map[string]int64)}
}

// Stats returns a snapshot of the crawler's progress.
func (c *Crawler) Stats() Stats {
	day := c.q.currentDay()
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{
		Day:               day,
		DayStarted:        c.dayStarted,
		Queued:            c.queuedLocked(),
		Paused:            c.pausedFor,
		InFlight:          c.st.inFlight,
		FetchedToday:      c.st.fetched,
		NewVersions:       c.st.newVersions,
		NotModified:       c.st.notModified,
		Unchanged:         c.st.unchanged,
		Forwarded:         c.st.forwarded,
		PassedOn:          c.st.passedOn,
		BytesFetched:      c.st.bytes,
		ResponseSec:       c.st.response.Seconds(),
		ErrorsByKind:      maps.Clone(c.st.errs),
		KnownURLs:         c.known,
		Connections:       c.openConns.Load(),
		ActiveHosts:       c.sched.running,
		WaitingHosts:      len(c.sched.waiting),
		CapHeld:           capHeld(c.cfg.Budget),
		LongestQueueWait:  c.st.queueWait,
		DaySwitch:         c.st.daySwitch,
		DaySwitchSendWait: c.st.sendWait,
		CopyWaits:         c.st.copyWaits,
		CopyWaitSec:       c.st.copyWait.Seconds(),
	}
}

// Queued reports the URLs of the current day waiting to be fetched (as
// Stats().Queued, without the copying).
func (c *Crawler) Queued() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queuedLocked()
}

// queuedLocked is Queued; the caller holds c.mu.
func (c *Crawler) queuedLocked() int64 { return c.pending - c.curInFlight }

// count records one error of kind. The first occurrence of each kind is
// logged at Warn level, later ones at Debug, so a flood of one kind cannot
// drown the log but no kind goes unnoticed. A URL that robots.txt
// disallows (kind KindRobots, no err) is the crawler obeying the site, not
// a failure: its first one is logged at Info.
func (c *Crawler) count(kind, url string, err error) {
	c.mu.Lock()
	c.st.errs[kind]++
	first := !c.logged[kind]
	c.logged[kind] = true
	c.mu.Unlock()
	attrs := []any{"kind", kind}
	if url != "" {
		attrs = append(attrs, "url", url)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	switch {
	case first && kind == KindRobots && err == nil:
		c.log.Info("crawl: not fetched, disallowed by robots.txt (later ones at debug level)", attrs...)
	case first && kind == KindNoArchive:
		c.log.Info("crawl: not archived, the page asks so (noarchive; later ones at debug level)", attrs...)
	case first && (kind == KindStatus4xx || kind == KindStatus5xx):
		// The site's answer, archived as such: nothing for the operator to fix.
		c.log.Info("crawl: first error answer of its kind, archived (later ones at debug level)", attrs...)
	case first:
		c.log.Warn("crawl: first error of its kind (later ones at debug level)", attrs...)
	default:
		c.log.Debug("crawl: error", attrs...)
	}
}

// errKind classifies a failed request.
func errKind(err error) string {
	if errors.Is(err, ErrInternalAddress) {
		return KindInternal
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return KindTimeout
	}
	return KindFetch
}
