package witness

import (
	"context"
	"fmt"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
)

// Date judges v's capture time for this node's readers: by the statements
// this node holds, and, when those do not date it, by the statements of
// v's other holders (stored here too when this node holds v). Verdicts
// are remembered: for good once a version is witnessed or fetched here,
// until a pending one's delay runs out, negativeTTL for an unwitnessed
// one.
func (sv *Service) Date(ctx context.Context, v archive.Version) archive.Dating {
	now := sv.now()
	ck := cacheKey{key: v.Key, digest: v.Digest, time: v.Time.UnixNano()}
	sv.mu.Lock()
	if vd, ok := sv.cache[ck]; ok && (vd.until.IsZero() || now.Before(vd.until)) {
		sv.mu.Unlock()
		return vd.d
	}
	sv.mu.Unlock()

	rule := sv.Store.Rule(nil)
	held, err := sv.Store.Witnesses(ctx, v)
	if err != nil {
		sv.log().Warn("witness: read statements", "url", v.URL, "err", err)
	}
	d, _ := rule.Date(v, held, now)
	if !d.Shown() {
		for _, c := range sv.others(ctx, v.Key) {
			ws, err := sv.Ask(ctx, c, []archive.Version{v})
			if err != nil || len(ws[0]) == 0 {
				continue
			}
			if d, _ = rule.Date(v, append(held, ws[0]...), now); d.Shown() {
				// Keep them if this node holds v (AddWitnesses refuses
				// otherwise).
				if added, _, err := sv.Store.AddWitnesses(ctx, v, ws[0]); err == nil {
					sv.fetched.Add(int64(added))
				}
				break
			}
		}
	}
	vd := verdict{d: d}
	switch d {
	case archive.Pending:
		vd.until = v.Time.Add(archive.MaxWitnessDelay)
	case archive.Unwitnessed:
		vd.until = now.Add(negativeTTL)
	}
	sv.mu.Lock()
	if sv.cache == nil || len(sv.cache) >= cacheSize {
		sv.cache = make(map[cacheKey]verdict) // a crude bound: start over
	}
	sv.cache[ck] = vd
	sv.mu.Unlock()
	return d
}

// Archive is a gateway archive that leaves out every version whose date
// no independent holder vouches for (Service.Date).
type Archive struct {
	Inner   gateway.Archive
	Witness *Service
}

var _ gateway.Archive = (*Archive)(nil)

// Versions implements gateway.Archive: Inner's versions of url that are
// shown as of their dates.
func (a *Archive) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	vs, err := a.Inner.Versions(ctx, url)
	if err != nil {
		return nil, err
	}
	out := vs[:0:0]
	for _, v := range vs {
		if a.Witness.Date(ctx, v).Shown() {
			out = append(out, v)
		} else {
			a.Witness.hidden.Add(1)
		}
	}
	return out, nil
}

// Get implements gateway.Archive: the version Inner picks for t when it is
// shown, otherwise the one Versions would pick among the shown ones.
func (a *Archive) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	v, c, err := a.Inner.Get(ctx, url, t)
	if err != nil || a.Witness.Date(ctx, v).Shown() {
		return v, c, err
	}
	vs, err := a.Versions(ctx, url)
	if err != nil {
		return archive.Version{}, nil, err
	}
	pick, ok := pickAt(vs, t)
	if !ok {
		return archive.Version{}, nil, fmt.Errorf("witness: %s: every version unwitnessed: %w", url, archive.ErrNotFound)
	}
	v, c, err = a.Inner.Get(ctx, url, pick.Time)
	if err != nil {
		return v, c, err
	}
	if v.Digest != pick.Digest || !v.Time.Equal(pick.Time) {
		return archive.Version{}, nil, fmt.Errorf("witness: %s at %s: asked for %s, got %s: %w",
			url, pick.Time, pick.Digest, v.Digest, archive.ErrNotFound)
	}
	return v, c, nil
}

// pickAt returns the newest of vs (oldest first) not after t, or the
// oldest if all are after it.
func pickAt(vs []archive.Version, t time.Time) (archive.Version, bool) {
	if len(vs) == 0 {
		return archive.Version{}, false
	}
	best := vs[0]
	for _, v := range vs {
		if !v.Time.After(t) && !v.Time.Before(best.Time) {
			best = v
		}
	}
	return best, true
}
