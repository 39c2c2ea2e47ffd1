package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// The round guard. A round pulls the owner's range from its replicas,
// and a replica holds the range's keys: a hostile one could sign a
// made-up capture of a URL of the range, dated now, and the owner's
// round would import it, witness it and push it to the other replicas.
// An honest replica fetches the owner's URLs only when the owner is not
// crawling them: it took the range over while the owner was down, owned
// it before the owner joined, or its view of the ring differed for a
// moment. So a record pulled in a round whose fetcher is another node,
// captured at a time this node's history says it was up and owned the
// key (ownedRanges, owned.go), is not imported: it goes to the held area
// of hand-offs (hold.go), is shown, witnessed and pushed by nothing, and
// this node's crawler fetches its URL; a fetch that finds the same
// status and payload releases it (Confirm), else it expires. Captures of other times —
// made while this node was down, or before the key was in its ranges —
// are imported as before.

// guardedLocal is the store a round's sync of one of this node's ranges
// fills (replicate.Sync): records this node's history says it was
// crawling when another node captured them are held; the others are
// imported. Safe for concurrent use (Sync imports a batch at once).
type guardedLocal struct {
	replicate.Local
	r    *Replicator
	from ring.Contact // the replica the range is pulled from

	mu     sync.Mutex
	fresh  []heldRecord // held in this sync: their URLs go to this node's crawler
	refuse int64        // refused for a full hold
}

// guarded returns the store for a round's sync of one of this node's
// ranges from replica c, or Local itself when this node keeps no held
// area.
func (r *Replicator) guarded(c ring.Contact) replicate.Local {
	if r.cfg.Held == nil || r.cfg.Check == nil {
		return r.cfg.Local
	}
	return &guardedLocal{Local: r.cfg.Local, r: r, from: c}
}

// Import implements replicate.Local.
func (l *guardedLocal) Import(ctx context.Context, name string, data []byte) (archive.Version, bool, error) {
	e, err := archive.ParseName(name)
	if err != nil {
		return l.Local.Import(ctx, name, data) // refused there, as any bad name
	}
	first, owned := l.r.owned.firstOwned(e.Key)
	if !owned || !l.r.dayEnd(e.Day).After(first) {
		// A key this node never owned by its history, or a capture whose
		// whole day ended before it first did: no need to read it twice.
		return l.take(ctx, e, name, data)
	}
	v, added, err := l.r.importIf(ctx, l.Local, name, data, func(v archive.Version) bool {
		return v.Peer == l.r.self() || !l.r.owned.ownedAt(e.Key, v.Time)
	})
	if !errors.Is(err, archive.ErrNotTaken) {
		if err == nil {
			l.r.cfg.Held.stored(e)
		}
		return v, added, err
	}
	rec := heldRecord{Entry: e, URL: v.URL, Status: v.Status, Fetcher: v.Peer, Sender: l.from.Peer, At: time.Now(), Round: true}
	added, err = l.r.cfg.Held.add(rec, data)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.Is(err, ErrHoldFull):
		l.refuse++
	case err == nil && added:
		l.fresh = append(l.fresh, rec)
		l.r.log.Debug("replication guard: held a replica's capture made while this node owned its URL", "url", v.URL,
			"fetcher", v.Peer, "replica", l.from.Peer, "captured", v.Time.UTC().Format(time.RFC3339))
	}
	return v, added, err
}

// take imports a record; a copy a hand-off holds is then dropped.
func (l *guardedLocal) take(ctx context.Context, e archive.Entry, name string, data []byte) (archive.Version, bool, error) {
	v, added, err := l.Local.Import(ctx, name, data)
	if err == nil {
		l.r.cfg.Held.stored(e)
	}
	return v, added, err
}

// importIf verifies a record as Import does and stores it in local only
// if take, told the version it names, says so (replicate.CondImporter):
// a record not taken returns its version with an error wrapping
// archive.ErrNotTaken. A local that is no CondImporter is checked with
// Config.Check, then imported: decoded and verified twice.
func (r *Replicator) importIf(ctx context.Context, local replicate.Local, name string, data []byte, take func(archive.Version) bool) (archive.Version, bool, error) {
	if c, ok := local.(replicate.CondImporter); ok {
		return c.ImportIf(ctx, name, data, take)
	}
	v, err := r.cfg.Check(ctx, name, data)
	if err != nil {
		return archive.Version{}, false, err
	}
	if !take(v) {
		return v, false, fmt.Errorf("replication: %s: %w", name, archive.ErrNotTaken)
	}
	return local.Import(ctx, name, data)
}

// dayEnd returns the end of the capture day day (archive.Entry.Day, in
// days of Config.DayLength since the epoch).
func (r *Replicator) dayEnd(day int64) time.Time {
	secs := int64(r.cfg.DayLength / time.Second)
	if secs <= 0 {
		secs = int64(defaultDayLength / time.Second)
	}
	return time.Unix((day+1)*secs, 0)
}

// defaultDayLength is the store's day length when Config.DayLength is 0.
const defaultDayLength = 24 * time.Hour

// guardOptions is syncOptions for a round's sync through local: the
// records a round held already are not read again. (A record a hand-off
// holds is: a take-over capture that its former owner, no longer a
// holder, handed off before the round pulled it is imported.)
func (r *Replicator) guardOptions(local replicate.Local) replicate.Options {
	opt := r.syncOptions()
	if _, ok := local.(*guardedLocal); !ok {
		return opt
	}
	skip, held := opt.Skip, r.cfg.Held
	opt.Skip = func(e archive.Entry) bool { return held.heldByRound(e) || skip != nil && skip(e) }
	return opt
}

// guardDone counts and logs what a round's sync through local held, and
// has this node's crawler fetch the held records' URLs.
func (r *Replicator) guardDone(ctx context.Context, local replicate.Local) {
	l, ok := local.(*guardedLocal)
	if !ok {
		return
	}
	l.mu.Lock()
	fresh, refuse := l.fresh, l.refuse
	l.mu.Unlock()
	if len(fresh) == 0 && refuse == 0 {
		return
	}
	r.mu.Lock()
	r.st.HandOff.Guarded += int64(len(fresh))
	r.st.HandOff.Holds += int64(len(fresh))
	r.st.HandOff.Refused += refuse
	r.mu.Unlock()
	urls := make([]string, 0, len(fresh))
	for _, rec := range fresh {
		urls = append(urls, rec.URL)
	}
	first := ""
	if len(fresh) > 0 {
		first = fresh[0].URL
	}
	r.log.Warn("replication guard: held captures a replica's round sent of URLs this node was crawling",
		"replica", l.from.Peer, "held", len(fresh), "refused", refuse, "first", first)
	r.recheck(ctx, urls)
}
