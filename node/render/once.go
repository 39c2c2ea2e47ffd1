package render

import (
	"sync"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// One render per answer. The crawler offers a page again before its
// crawl state records the render when something asks for a fetch of the
// URL meanwhile: the owner's replication round pulls the renderer's
// records of the page before their delivery arrives, holds them as
// captures made while the owner was crawling the URL, and has its
// crawler fetch the URL again (node/replication, guard.go) — under load
// a second, equal render of the same page. So a page offered with the
// answer (URL, status, body digest) of a render in flight waits for that
// render, and one offered with the answer of a render done within
// RecentRender is served by it while the archive still holds the page it
// stored; neither renders again. An answer that differs is a new page
// and is rendered.

// RecentRender is how long a render serves a page offered again with the
// same answer.
const RecentRender = 10 * time.Minute

// maxRecent bounds the renders remembered; past it the oldest are
// forgotten (their pages, offered again, are rendered again).
const maxRecent = 4096

// answer names what the crawler fetched for a page.
type answer struct {
	url    string
	status int
	digest id.ID
}

// doneRender is a render that stored its page: the member that rendered
// it, and a time its page's version is not older than.
type doneRender struct {
	links   []string
	peer    string
	started time.Time
	at      time.Time
}

// renders tracks the renders in flight and those done recently, by
// answer. Safe for concurrent use.
type renders struct {
	mu     sync.Mutex
	flying map[answer]chan struct{}
	done   map[answer]doneRender
	order  []answer // done, oldest first
	waits  int      // begins told to wait, for tests
}

// begin returns the render of a done within RecentRender of now, if
// any (ok); else, when a render of a is in flight, a channel closed when
// it ends (the caller waits, then begins again); else it marks a render
// of a in flight (the caller renders, then calls end) and returns
// neither.
func (r *renders) begin(a answer, now time.Time) (d doneRender, ok bool, wait <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.done[a]; ok && now.Sub(d.at) < RecentRender {
		return d, true, nil
	}
	if ch, ok := r.flying[a]; ok {
		r.waits++
		return doneRender{}, false, ch
	}
	if r.flying == nil {
		r.flying, r.done = map[answer]chan struct{}{}, map[answer]doneRender{}
	}
	r.flying[a] = make(chan struct{})
	return doneRender{}, false, nil
}

// end ends the render of a that begin marked in flight; d is what it
// stored, nil when it stored no page.
func (r *renders) end(a answer, d *doneRender) {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.flying[a])
	delete(r.flying, a)
	if d == nil {
		return
	}
	if _, ok := r.done[a]; !ok {
		r.order = append(r.order, a)
	}
	r.done[a] = *d
	for len(r.order) > maxRecent || len(r.order) > 0 && d.at.Sub(r.done[r.order[0]].at) >= RecentRender {
		delete(r.done, r.order[0])
		r.order = r.order[1:]
	}
}

// waited returns how many begins were told to wait.
func (r *renders) waited() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waits
}

// forget drops the render of a (its page is no longer in the archive).
func (r *renders) forget(a answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.done, a)
}
