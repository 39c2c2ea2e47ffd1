package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/archive"
	"golang.org/x/sync/semaphore"
)

// Archive is what the crawler needs from the store (archive.Store
// implements it).
type Archive interface {
	// Put stores c unless its payload equals the newest stored version;
	// added reports whether a new version was written. Unless it fails, it
	// also records c.State, when set, as the crawl state of c.URL, as
	// SetState does (archive.Capture.State).
	Put(ctx context.Context, c archive.Capture) (archive.Version, bool, error)
	// State returns the crawl state of url, archive.ErrNotFound if never set.
	State(ctx context.Context, url string) (archive.CrawlState, error)
	// SetState replaces the crawl state of url.
	SetState(ctx context.Context, url string, st archive.CrawlState) error
}

// StatesReader reads the crawl states of many URLs at once
// (archive.Store does): errs[i] is what State's error for urls[i] would
// be. A host loop reads its batch's states with it (hostLoop.prefetch)
// when the crawler's Archive implements it.
type StatesReader interface {
	States(ctx context.Context, urls []string) (sts []archive.CrawlState, errs []error, err error)
}

// Toucher records checks that found a page unchanged (a 304 answer), so
// that exports can carry revisit records for those days; archive.Store
// implements it (Deps.Touch).
type Toucher interface {
	Touch(ctx context.Context, url string, t time.Time) error
}

// StateToucher is a Toucher that also takes the crawl state the crawler
// read from the same archive before the check (archive.Store does): a
// state written with a version (archive.CrawlState.Versioned) spares the
// archive looking the URL's version up again. The crawler uses it when
// Deps.Touch implements it.
type StateToucher interface {
	TouchState(ctx context.Context, url string, t time.Time, st archive.CrawlState) error
}

// VersionStater derives a crawl state from a URL's newest stored version
// (archive.Store does; Deps.Versions). The crawler asks it when a URL has no crawl state of its own — a URL of a range this node
// has just taken over, whose versions it holds as a replica — so that the
// first visit is a conditional GET with the stored validators and an
// unchanged page stores nothing.
type VersionStater interface {
	StateFromVersion(ctx context.Context, url string) (archive.CrawlState, error)
}

// URLLister lists the URLs an archive holds versions of (archive.Store
// does; Deps.Lister). At the start of every day the crawler
// queues the listed URLs it owns besides those it already knows: a node
// that becomes the owner of a range — after a crash, a leave, a join or an
// outage — holds the range's versions as a replica or receives them by
// replication, so every URL the range ever stored is fetched again.
type URLLister interface {
	URLs(ctx context.Context, q archive.Query, fn func(url string) error) error
}

// VersionHaver tells which URLs have a stored version (archive.Store
// does; Deps.Haver). The crawler uses it to find the
// known URLs that no version carries to the range's next owner.
type VersionHaver interface {
	// HasVersions reports, for each of urls, whether it has a stored
	// version; the crawler asks for a chunk of known URLs at once, in
	// URL order.
	HasVersions(urls []string) ([]bool, error)
}

// KnownSharer hands URLs to the nodes that replicate this node's ranges,
// to be remembered there without being crawled (the node implements it;
// Deps.Sharer). At the start of every day the
// crawler shares the known URLs that no stored version carries — those
// refused by robots.txt, by type or size, or failing at the network level
// — with the holders of their ranges: for those it owns, so that whoever
// owns them next, after a crash, crawls them too; for those it no longer
// owns (its ranges moved: a join, or its return after an outage), so that
// their owner does. ShareKnown delivers each URL to its owner and the
// owner's replicas, this node aside, before it returns; an error with a
// FailedURLs() []string method names the URLs that did not reach every
// holder (forward.ShareError), which go to the OnKnown function.
type KnownSharer interface {
	ShareKnown(ctx context.Context, urls []string) error
}

// Forwarder delivers extracted canonical links to the nodes that own them
// (the node implements it). Forward returns only once the links are
// delivered or durably accepted for delivery; an error means the crawler
// must assume none were.
type Forwarder interface {
	Forward(ctx context.Context, urls []string) error
}

// Sentinel errors.
var (
	ErrClosed  = errors.New("crawl: closed")
	ErrStarted = errors.New("crawl: already started")
)

// hostBatch is how many queue entries a host loop reads at a time; after
// each batch it yields to waiting hosts.
const hostBatch = 32

// procFactor bounds fetched pages being processed (archive, links,
// forwarding) to procFactor*Concurrency, while only Concurrency hold a
// connection. A page stays in processing while its version's index group
// is synced (up to the archive's commit window plus a sync, tens of ms on
// a journaled disk), so at hundreds of pages a second the bound must be
// well above what the CPU works on at once: with 4, a crawl on a fresh
// journaled ext4 spent its time waiting for a processing slot (herod 1
// node: 705-779 pages/s, 975-1,041 with 16; docs/crawl.md). At ~2,300
// pages/s the host loop still waited 90-170 ms a round (of ~1.3 s) for a
// slot with 16, under 1 ms with 64 (scripts/bench-crawl.sh). Bodies in
// processing stay bounded by procBodyFactor.
const procFactor = 64

// procBodyFactor bounds the bytes of bodies held by pages in processing to
// procBodyFactor*MaxBody, so that many slots cannot mean many large bodies.
const procBodyFactor = 4

// Crawler crawls the URLs given to Add, once per day. See the package
// documentation for its contract.
type Crawler struct {
	cfg       Config
	guard     *guard // refuses internal addresses on every connection (netguard.go)
	log       *slog.Logger
	pausedFor string // Config.Paused's last reason, guarded by mu (pause.go)
	a         Archive
	f         Forwarder
	deps      Deps // a and f, and the optional parties
	q         *queue
	onKnown   atomic.Pointer[func([]string)] // OnKnown's function
	scope     *scope
	robots    *robotsCache        // what the crawler obeys: Config.Robots, or local
	local     *robotsCache        // fetched from the origins by this node: served to peers
	sem       chan struct{}       // request slots: Concurrency
	openConns atomic.Int64        // connections of the default client open now
	proc      chan struct{}       // fetches in progress, body processing included: procFactor*Concurrency
	retry     storeRetry          // back-off after failed Puts (storeretry.go)
	bodies    *semaphore.Weighted // bytes of bodies in processing: procBodyFactor*MaxBody

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// dayMu orders day changes against queue reads and adds: startDay
	// holds it exclusively across the queue reset and the epoch bump, so
	// every batch a host loop reads, and every Add's pending count,
	// belongs wholly to one epoch.
	dayMu sync.RWMutex
	// catchUp serializes catchUpDay; caughtUp records that it ran.
	catchUp  sync.Mutex
	caughtUp bool

	mu          sync.Mutex
	started     bool
	closed      bool
	epoch       uint64        // bumped by NewDay: host loops reload
	sending     int64         // requests past their epoch check, not yet answered (beginSend)
	sendGate    chan struct{} // set while a new day is about to begin: closed when it has (holdSends)
	sent        chan struct{} // closed when sending falls to 0 while sendGate is set
	dayStarted  time.Time     // when the epoch's day began (Stats.DayStarted)
	sched       *sched        // the host scheduler (sched.go)
	pending     int64         // this epoch's queue entries not finished, in-flight included
	curInFlight int64         // this epoch's entries in flight (st.inFlight counts all)
	known       int64
	reqHosts    map[string]hostReqs // dynamic requisites queued per host today (AddRequisites)
	passed      map[string]struct{} // URLs passed on on passedDay, a queue day (requeueable)
	passedDay   int64
	st          counters
	logged      map[string]bool

	// closing, when a test sets it, runs in Close once the crawler is
	// marked closed, before Close waits for its work and closes the queue.
	closing func()
}

// New opens (or creates) the queue and URL-seen set in dir and returns a
// crawler that is not yet fetching; call Start. Add may be called before
// Start: the URLs wait in the queue. d must name an Archive and a
// Forwarder (see Deps for the optional parties).
func New(dir string, cfg Config, d Deps) (*Crawler, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := newGuard(cfg.AllowPrivate)
	c := &Crawler{}
	cfg.Client = cfg.clientWith(g, &c.openConns)
	q, err := openQueue(dir, cfg.HostNewURLs)
	if err != nil {
		return nil, err
	}
	_, pending, err := q.pending()
	if err != nil {
		q.close()
		return nil, err
	}
	known, err := q.known()
	if err != nil {
		q.close()
		return nil, err
	}
	sem := make(chan struct{}, cfg.Concurrency)
	agent := productToken(cfg.UserAgent)
	direct := &HTTPRobots{Client: cfg.Client, UserAgent: cfg.UserAgent, From: cfg.From, Budget: cfg.Budget, Clock: cfg.Clock, slots: sem}
	local := newRobotsCache(direct, agent, cfg.RobotsTTL, cfg.Clock)
	robots := local
	if cfg.Robots != nil {
		robots = newRobotsCache(cfg.Robots, agent, cfg.RobotsTTL, cfg.Clock)
	}
	c.cfg = cfg
	c.guard = g
	c.log = cfg.Logger
	c.a, c.f, c.q, c.deps = d.Archive, d.Forwarder, q, d
	c.scope = newScope(cfg)
	c.robots, c.local = robots, local
	c.sem = sem
	c.proc = make(chan struct{}, procFactor*cfg.Concurrency)
	c.bodies = semaphore.NewWeighted(procBodyFactor * cfg.MaxBody)
	c.sched = newSched(cfg.MaxActiveHosts)
	c.pending, c.known = pending, known
	c.logged = make(map[string]bool)
	c.st.reset()
	return c, nil
}

// Day returns the day number of t: t.Unix() / DayLength in seconds.
func (c *Crawler) Day(t time.Time) int64 {
	return t.Unix() / int64(c.cfg.DayLength/time.Second)
}

// Today returns the day number of the crawler's clock now. Every node
// starts its new day (and resets its URL-seen set) when this changes.
func (c *Crawler) Today() int64 { return c.Day(c.cfg.Clock()) }

// CurrentDay returns the day the crawler is crawling (without taking a
// lock, so callers may hold their own): Today, or later
// when NewDay was called before the clock's day changed.
func (c *Crawler) CurrentDay() int64 { return c.q.currentDay() }

// Start starts the fetch loops of every host with pending URLs and the day
// timer. If the stored day is older than the clock's day (the node was down
// across a day boundary) or a NewDay was interrupted, a new day starts
// first. Work stops when ctx is cancelled or Close is called.
func (c *Crawler) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.started {
		c.mu.Unlock()
		return ErrStarted
	}
	c.started = true
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.mu.Unlock()

	if err := c.catchUpDay(c.ctx); err != nil {
		return err
	}
	hosts, _, err := c.q.pending()
	if err != nil {
		return err
	}
	c.mu.Lock()
	for h := range hosts {
		c.wakeLocked(h)
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go c.dayTimer()
	return nil
}

// catchUpDay finishes an interrupted NewDay, or starts the clock's day
// when the queue's is older (the node was down across a day boundary, or
// its queue is new). Start runs it, and so does the first Add before
// Start: a node's links can arrive between its ring join and Start, and
// the day Start would begin after them would drop them.
func (c *Crawler) catchUpDay(ctx context.Context) error {
	c.catchUp.Lock()
	defer c.catchUp.Unlock()
	if c.caughtUp {
		return nil // once per process: later days start on the day timer
	}
	interrupted, err := c.q.interruptedNewDay()
	if err != nil {
		return err
	}
	switch {
	case interrupted != 0:
		err = c.startDay(ctx, interrupted)
	case c.Today() > c.q.currentDay():
		err = c.NewDay(ctx)
	}
	if err == nil {
		c.caughtUp = true
	}
	return err
}

// Add offers links that arrived for this node. Each is canonicalized and
// checked against the scope (length, dynamic, traps, host lists); refused
// ones are counted by kind. URLs already seen today are dropped; the rest
// are queued durably (synced to disk) before Add returns.
func (c *Crawler) Add(ctx context.Context, urls []string) error {
	_, err := c.add(ctx, urls)
	return err
}

// add is Add, returning how many URLs it queued.
func (c *Crawler) add(ctx context.Context, urls []string) (int, error) {
	return c.addChecked(ctx, urls, c.scope.check)
}

// addChecked is add with check as the scope.
func (c *Crawler) addChecked(ctx context.Context, urls []string, check func(string) (string, string)) (int, error) {
	return c.addDepth(ctx, urls, check, 0)
}

// addDepth is addChecked for URLs reached through redirects redirects.
func (c *Crawler) addDepth(ctx context.Context, urls []string, check func(string) (string, string), redirects int) (int, error) {
	return c.addShared(ctx, urls, check, redirects, true)
}

// addShared is addDepth; with share false the new known URLs are not
// told to OnKnown's function (not shared with their ranges' holders).
func (c *Crawler) addShared(ctx context.Context, urls []string, check func(string) (string, string), redirects int, share bool) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	closed, started := c.closed, c.started
	c.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	if !started {
		if err := c.catchUpDay(ctx); err != nil {
			return 0, err
		}
	}
	ok := make([]string, 0, len(urls))
	for _, raw := range urls {
		u, kind := check(raw)
		if kind != "" {
			c.count(kind, raw, nil)
			continue
		}
		ok = append(ok, u)
	}
	c.dayMu.RLock()
	defer c.dayMu.RUnlock()
	added, fresh, capped, err := c.q.add(ok, redirects)
	for _, u := range capped {
		c.count(KindHostNewURLs, u, fmt.Errorf("host %s had %d new URLs today", hostOf(u), c.cfg.HostNewURLs))
	}
	if err != nil {
		c.count(KindQueue, "", err)
		return 0, err
	}
	if len(added) < len(ok) && c.log.Enabled(ctx, slog.LevelDebug) {
		queued := make(map[string]bool, len(added))
		for _, e := range added {
			queued[e.url] = true
		}
		for _, u := range ok {
			if !queued[u] {
				c.log.Debug("crawl: not queued: seen today", "url", u)
			}
		}
	}
	if fn := c.onKnown.Load(); fn != nil && fresh > 0 && share {
		urls := make([]string, 0, fresh)
		for _, e := range added {
			if e.fresh {
				urls = append(urls, e.url)
			}
		}
		(*fn)(urls)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending += int64(len(added))
	c.known += int64(fresh)
	for _, e := range added {
		c.wakeLocked(hostOf(e.url))
	}
	return len(added), nil
}

// NewDay starts the thesis's daily cycle: the URL-seen set and the queue
// pointer reset, pending entries of the old day are dropped and every known
// URL this node owns (Config.Owns) is queued again, to be fetched
// conditionally; then the known URLs no version carries are shared with
// their ranges' holders (KnownSharer). The new day is the clock's day, or the stored day plus one
// if that is not later.
func (c *Crawler) NewDay(ctx context.Context) error {
	done, err := c.begin()
	if err != nil {
		return err
	}
	defer done()
	day := max(c.Today(), c.q.currentDay()+1)
	if err := c.startDay(ctx, day); err != nil {
		return err
	}
	// Outside the day's locks: it talks to other nodes.
	if err := c.shareUnversioned(ctx); err != nil && ctx.Err() == nil {
		c.log.Warn("crawl: sharing the known URLs no version carries failed; those named are shared again, the rest next day", "err", err)
	}
	return nil
}

func (c *Crawler) startDay(ctx context.Context, day int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	c.q.turn.Lock()
	defer c.q.turn.Unlock()
	if day <= c.q.currentDay() {
		return nil // a concurrent NewDay started it
	}
	var more func(yield func(string) error) error
	if l := c.deps.Lister; l != nil {
		more = func(yield func(string) error) error { return l.URLs(ctx, archive.Query{}, yield) }
	}
	// The day's queue is written while the old day goes on; only the
	// switch holds the day's lock (crawl/newday.go). Requeues, not
	// Config.Owns alone: the host lists hold for known URLs too
	// (requeue.go).
	staged, err := c.q.stageDay(day, c.Requeues, more, c.takeStored)
	if err != nil {
		c.count(KindQueue, "", err)
		return err
	}
	if err := c.switchDay(staged); err != nil {
		return err
	}
	if err := c.q.dropBefore(day); err != nil {
		// Left for the next open or day to delete: nothing reads them.
		c.count(KindQueue, "", err)
	}
	return nil
}

// switchDay makes the staged day current: host loops and adds wait for
// the switch only, requests also for the old day's on their way
// (holdSends, at most Config.DaySwitchWait).
func (c *Crawler) switchDay(staged *stagedDay) error {
	waited := c.holdSends()
	defer c.openSends()
	c.dayMu.Lock()
	defer c.dayMu.Unlock()
	start := time.Now()
	day := staged.day
	hosts, n, fresh, err := c.q.switchDay(staged)
	if err != nil {
		c.count(KindQueue, "", err)
		return err
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.known += fresh
	c.epoch++ // host loops drop what they read before the reset
	c.dayStarted = c.cfg.Clock()
	c.pending = n // fetches of the old day still in flight no longer count
	c.curInFlight = 0
	c.st.reset()
	for h := range hosts {
		c.wakeLocked(h)
	}
	c.st.daySwitch = time.Since(start)
	c.st.sendWait = waited
	c.log.Info("crawl: new day", "day", day, "queued", n, "hosts", len(hosts), "switch", c.st.daySwitch, "sendWait", waited)
	return nil
}

// takeStored admits a URL the archive holds into the day's crawl: one this
// node owns and its scope admits (an operator's host lists hold for
// ranges taken over too).
func (c *Crawler) takeStored(u string) bool {
	if c.cfg.Owns != nil && !c.cfg.Owns(u) {
		return false
	}
	_, kind := c.checkKnown(u)
	return kind == ""
}

// checkKnown is the scope check for a URL that is already known — stored,
// queued before, or remembered for another node: every rule but the
// dynamic one, which a page requisite with a query passed when it was
// first added (AddRequisites).
func (c *Crawler) checkKnown(raw string) (string, string) {
	u, _, kind := c.scope.checkReq(raw)
	return u, kind
}

// dayTimer starts a new day whenever the clock passes a day boundary.
func (c *Crawler) dayTimer() {
	defer c.wg.Done()
	for {
		now := c.cfg.Clock()
		dayLen := c.cfg.DayLength
		next := time.Unix((c.Day(now)+1)*int64(dayLen/time.Second), 0)
		wait := min(max(next.Sub(now), 10*time.Millisecond), time.Minute)
		t := time.NewTimer(wait)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if c.Today() > c.q.currentDay() {
			if err := c.NewDay(c.ctx); err != nil && c.ctx.Err() == nil {
				c.log.Error("crawl: new day failed", "err", err)
			}
		}
	}
}

// Idle reports whether the queue is empty and nothing is in flight.
func (c *Crawler) Idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending == 0 && c.st.inFlight == 0
}

// begin registers work that reads the queue's database from outside the
// crawler's own goroutines (NewDay, TakeOver: their walks read it through
// a snapshot, which must not outlive the database), so that Close waits
// for it; it fails with ErrClosed once the crawler is closed. The caller
// calls done when the work ends.
func (c *Crawler) begin() (done func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.wg.Add(1)
	return c.wg.Done, nil
}

// Close stops the crawler, waits for in-flight fetches, new days and
// take-overs to end (fetches are cancelled; their queue entries stay for
// the next start) and closes the queue database.
func (c *Crawler) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	if c.closing != nil {
		c.closing()
	}
	c.wg.Wait()
	if err := c.q.close(); err != nil {
		return fmt.Errorf("crawl close: %w", err)
	}
	return nil
}

// RobotsRecord returns the robots.txt record of origin ("scheme://host")
// as this node fetched it from the origin server, from a cache kept for
// RobotsTTL. It never goes through Config.Robots, so a node serves it to
// the other nodes of the ring when it owns origin+"/robots.txt" (and uses
// it as its own RobotsSource answer for the origins it owns) without
// asking itself in a loop: each file is then fetched once per RobotsTTL
// ring-wide.
func (c *Crawler) RobotsRecord(ctx context.Context, origin string) (RobotsRecord, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return RobotsRecord{}, fmt.Errorf("%w: %q", errNoRobots, origin)
	}
	return c.local.record(ctx, u.Scheme+"://"+u.Host)
}

// takeOverBatch is how many URLs TakeOver adds at a time.
const takeOverBatch = 4096

// TakeOver queues, for today, every URL in this node's queue database or
// archive (when the Archive is a URLLister) for which in returns true and
// that the scope admits, unless it was already queued today. The node
// calls it when a virtual server's range grows in the middle of a day —
// its predecessor died or left — so that the URLs it takes over are
// fetched today rather than from the next day on. It returns how many URLs
// it queued.
func (c *Crawler) TakeOver(ctx context.Context, in func(url string) bool) (int, error) {
	done, err := c.begin()
	if err != nil {
		return 0, err
	}
	defer done()
	var batch []string
	var queued int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := c.addChecked(ctx, batch, c.checkKnown)
		queued += n
		batch = batch[:0]
		return err
	}
	take := func(u string) error {
		if !in(u) {
			return nil
		}
		batch = append(batch, u)
		if len(batch) >= takeOverBatch {
			return flush()
		}
		return nil
	}
	if err := c.q.knownURLs(take); err != nil {
		return queued, fmt.Errorf("crawl take over: %w", err)
	}
	if l := c.deps.Lister; l != nil {
		if err := l.URLs(ctx, archive.Query{}, take); err != nil {
			return queued, fmt.Errorf("crawl take over: %w", err)
		}
	}
	if err := flush(); err != nil {
		return queued, fmt.Errorf("crawl take over: %w", err)
	}
	return queued, nil
}

// shareChunk is how many known URLs shareUnversioned asks its
// VersionHaver about at once.
const shareChunk = 4096

// shareUnversioned hands on the known URLs that no stored version carries
// to the holders of their ranges (see KnownSharer). Without Deps.Haver
// and Deps.Sharer it does nothing.
func (c *Crawler) shareUnversioned(ctx context.Context) error {
	vh, ks := c.deps.Haver, c.deps.Sharer
	if vh == nil || ks == nil {
		return nil
	}
	var owned, moved, chunk []string
	check := func() error {
		has, err := vh.HasVersions(chunk)
		if err != nil {
			return err
		}
		for i, u := range chunk {
			switch {
			case has[i]:
			case c.cfg.Owns == nil || c.cfg.Owns(u):
				owned = append(owned, u)
			default:
				moved = append(moved, u)
			}
		}
		chunk = chunk[:0]
		return nil
	}
	err := c.q.knownURLs(func(u string) error {
		if chunk = append(chunk, u); len(chunk) >= shareChunk {
			return check()
		}
		return nil
	})
	if err == nil && len(chunk) > 0 {
		err = check()
	}
	if err != nil {
		return fmt.Errorf("crawl share known: %w", err)
	}
	if all := append(owned, moved...); len(all) > 0 {
		if err := ks.ShareKnown(ctx, all); err != nil {
			// What missed a holder goes to the OnKnown function, whose
			// shares are tried again within minutes, not the next day.
			var named interface{ FailedURLs() []string }
			if fn := c.onKnown.Load(); fn != nil && errors.As(err, &named) && ctx.Err() == nil {
				(*fn)(named.FailedURLs())
			}
			return fmt.Errorf("crawl share known: %w", err)
		}
	}
	c.log.Debug("crawl: shared known URLs without versions", "owned", len(owned), "moved", len(moved))
	return nil
}

// OnKnown makes the crawler call fn with the URLs that Add,
// AddRequisites, Seed or TakeOver made known to this node (they were
// not known before), once they are durably queued, on the adding
// goroutine: fn must not block (replication queues them for the range's
// holders, so that a URL survives its owner's death right after it was
// learned). URLs remembered for other nodes (Remember) and those a new
// day takes from the archive are not reported; the known URLs the day's
// share (KnownSharer) did not deliver are, when its error names them
// (a FailedURLs method), on the new day's goroutine. fn replaces the
// previous function; nil stops the calls.
func (c *Crawler) OnKnown(fn func(urls []string)) {
	if fn == nil {
		c.onKnown.Store(nil)
		return
	}
	c.onKnown.Store(&fn)
}

// Remember makes urls known to this node without queuing them: a replica
// keeps the URLs of its predecessors' ranges that no version carries
// (KnownSharer), and queues them at a new day once it owns them. URLs that
// are not canonical or that the scope refuses are dropped.
func (c *Crawler) Remember(ctx context.Context, urls []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ok := make([]string, 0, len(urls))
	for _, raw := range urls {
		if u, kind := c.checkKnown(raw); kind == "" && u == raw {
			ok = append(ok, u)
		}
	}
	n, err := c.q.remember(ok)
	if err != nil {
		c.count(KindQueue, "", err)
		return err
	}
	c.mu.Lock()
	c.known += int64(n)
	c.mu.Unlock()
	return nil
}
