package links

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Ring is what a Router needs of the ring; *ring.Ring implements it.
type Ring interface {
	// Successors returns the owner of key and the next k-1 distinct real
	// nodes after it.
	Successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error)
}

// DefaultHolders is Router.Holders when zero: the owner of a target and
// the next two real nodes, as for the archive's versions.
const DefaultHolders = 3

// Router sends records to the holders of their targets and asks them
// for a target's links. A target's holders are its owner and the next
// Holders-1 real nodes: a put succeeds when the owner took it (the
// others are best effort, counted in Stats); a question is asked of
// every holder and the answers merged, so a range's new owner (a node
// that joined) answers with its successors' copies until the records
// reach it.
type Router struct {
	Ring    Ring
	Self    string  // this node's peer id
	Local   *Server // answers for this node without a stream
	Client  *Client
	Holders int
	Logger  *slog.Logger

	replicaFails atomic.Int64
}

// Stats counts what a Router could not do.
type Stats struct {
	ReplicaFails int64 `json:"replicaFails"` // puts to a holder other than the owner that failed
}

// Stats returns the router's counters.
func (rt *Router) Stats() Stats { return Stats{ReplicaFails: rt.replicaFails.Load()} }

func (rt *Router) holders() int {
	if rt.Holders <= 0 {
		return DefaultHolders
	}
	return rt.Holders
}

func (rt *Router) log() *slog.Logger {
	if rt.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return rt.Logger
}

// keyed is a record with its target's ring key.
type keyed struct {
	key id.ID
	r   Record
}

// Deliver sends recs to their targets' holders: sorted by key, one
// successor walk per run of keys one owner holds, then one request per
// real node for every run it holds (MaxBatch records a request), so that
// a sweep costs each holder one stream and one index write however many
// of its virtual servers the targets fall in. It fails if a node that
// owns some of the records did not take them; a holder that is not the
// owner of any of its records is best effort (Stats.ReplicaFails).
func (rt *Router) Deliver(ctx context.Context, recs []Record) error {
	ks := make([]keyed, len(recs))
	for i, r := range recs {
		ks[i] = keyed{id.OfString(r.Target), r}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return a.key.Cmp(b.key) })
	var dests []*delivery
	byPeer := map[string]*delivery{}
	for len(ks) > 0 {
		hs, err := rt.Ring.Successors(ctx, ks[0].key, rt.holders())
		if err != nil && len(hs) == 0 {
			return fmt.Errorf("links deliver: %w", err)
		}
		owner := hs[0]
		n := 1
		for n < len(ks) && (ks[n].key == ks[0].key || id.InHalfOpen(ks[n].key, ks[0].key, owner.ID)) {
			n++
		}
		for i, h := range hs {
			d := byPeer[h.Peer]
			if d == nil {
				d = &delivery{to: h}
				byPeer[h.Peer] = d
				dests = append(dests, d)
			}
			if i == 0 {
				d.owns = true
			}
			for _, k := range ks[:n] {
				d.recs = append(d.recs, k.r)
			}
		}
		ks = ks[n:]
	}
	var failed error
	for _, d := range dests {
		for recs := d.recs; len(recs) > 0; {
			n := min(len(recs), MaxBatch)
			err := rt.put(ctx, d.to, recs[:n])
			recs = recs[n:]
			switch {
			case err != nil && d.owns:
				failed = errors.Join(failed, fmt.Errorf("links deliver to %s: %w", d.to.String(), err))
				recs = nil
			case err != nil:
				rt.replicaFails.Add(1)
				rt.log().Debug("links: replica put failed", "to", d.to.String(), "err", err)
				recs = nil
			}
		}
	}
	return failed
}

// delivery is what one real node is sent of a Deliver: the records of
// every run it holds, in key order, and whether it owns one of the runs.
type delivery struct {
	to   ring.Node
	recs []Record
	owns bool
}

func (rt *Router) put(ctx context.Context, to ring.Node, recs []Record) error {
	if to.Peer == rt.Self {
		_, err := rt.Local.Index.Put(ctx, recs)
		return err
	}
	return rt.Client.Put(ctx, to.Contact, recs)
}

// ErrNoHolder reports that no holder of a target answered.
var ErrNoHolder = errors.New("links: no holder of the url answered")

// Links answers "which pages linked to target at at" (any time if at is
// zero) ring-wide: every holder's records merged, then those live at at,
// at most limit (0: all).
func (rt *Router) Links(ctx context.Context, target string, at time.Time, limit int) (Result, error) {
	hs, err := rt.Ring.Successors(ctx, id.OfString(target), rt.holders())
	if len(hs) == 0 {
		return Result{}, fmt.Errorf("links %s: %w", target, err)
	}
	var got []Result
	var last error
	for _, h := range hs {
		var res Result
		var err error
		if h.Peer == rt.Self {
			var keep Filter
			if rt.Local.Keep != nil {
				keep = rt.Local.Keep()
			}
			res, err = rt.Local.Index.Links(ctx, target, time.Time{}, 0, keep)
		} else {
			res, err = rt.Client.Get(ctx, h.Contact, target)
		}
		if err != nil {
			last = err
			continue
		}
		got = append(got, res)
	}
	if len(got) == 0 {
		return Result{}, fmt.Errorf("%w: %w", ErrNoHolder, last)
	}
	return Select(Merge(got...), at, limit), nil
}

// Select keeps the records of res live at at (all if at is zero), at
// most limit (0: all), and counts the ones over limit in More.
func Select(res Result, at time.Time, limit int) Result {
	out := res
	out.Records = make([]Record, 0, len(res.Records))
	for _, r := range res.Records {
		if r.LiveAt(at) {
			out.Records = append(out.Records, r)
		}
	}
	if limit > 0 && len(out.Records) > limit {
		out.More += len(out.Records) - limit
		out.Records = out.Records[:limit]
	}
	return out
}
