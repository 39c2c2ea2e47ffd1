package witness

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Vouch returns v's dating for this node's readers (Date) and the
// statements that vouch for it, earliest first: this node's, and those
// its other holders keep. Unlike Date it asks the other holders about any
// version no statement here vouches for, a pending one or this node's own
// fetch included (the banner names its witnesses); the answer is
// remembered as Date's is.
func (sv *Service) Vouch(ctx context.Context, v archive.Version) (archive.Dating, []archive.Witness) {
	vd := sv.judge(ctx, []archive.Version{v}, true)[0]
	return vd.d, vd.ws
}

// Date judges v's capture time for this node's readers (DateAll of v).
func (sv *Service) Date(ctx context.Context, v archive.Version) archive.Dating {
	return sv.DateAll(ctx, []archive.Version{v})[0]
}

// DateAll judges the capture times of vs for this node's readers: by the
// statements this node holds, and, for the versions those do not date, by
// the statements of their other holders, asked at most MaxAsk versions a
// request (the versions of one URL share their holders); statements about
// versions this node holds are stored too. Verdicts are remembered: for
// good once a version is witnessed or fetched here, until a pending one's
// delay runs out, negativeTTL for an unwitnessed one.
func (sv *Service) DateAll(ctx context.Context, vs []archive.Version) []archive.Dating {
	vds := sv.judge(ctx, vs, false)
	out := make([]archive.Dating, len(vs))
	for i := range vds {
		out[i] = vds[i].d
	}
	return out
}

// judge is DateAll, returning the verdicts; with vouch it also asks the
// other holders about versions shown without a statement (pending, or
// fetched here).
func (sv *Service) judge(ctx context.Context, vs []archive.Version, vouch bool) []verdict {
	now := sv.now()
	rule := sv.Store.Rule(nil)
	out := make([]verdict, len(vs))
	held := make([][]archive.Witness, len(vs))
	var ask []int // indexes of vs to ask the other holders about
	for i, v := range vs {
		sv.mu.Lock()
		vd, ok := sv.cache[keyOf(v)]
		sv.mu.Unlock()
		if ok && (vd.until.IsZero() || now.Before(vd.until)) && (!vouch || len(vd.ws) > 0 || vd.asked) {
			out[i] = vd
			continue
		}
		ws, err := sv.Store.Witnesses(ctx, v)
		if err != nil {
			sv.log().Warn("witness: read statements", "url", v.URL, "err", err)
		}
		held[i] = ws
		out[i].d, out[i].ws = rule.Date(v, ws, now)
		if !out[i].d.Shown() || (vouch && len(out[i].ws) == 0) {
			out[i].asked = true
			ask = append(ask, i)
		}
	}
	// Ask the holders of each key about its versions in question.
	byKey := map[id.ID][]int{}
	var keys []id.ID
	for _, i := range ask {
		k := vs[i].Key
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	for _, k := range keys {
		idx := byKey[k]
		for _, c := range sv.others(ctx, k) {
			var left []int
			for start := 0; start < len(idx); start += MaxAsk {
				batch := idx[start:min(len(idx), start+MaxAsk)]
				q := make([]archive.Version, len(batch))
				for j, i := range batch {
					q[j] = vs[i]
				}
				ws, err := sv.Ask(ctx, c, q)
				if err != nil {
					left = append(left, batch...)
					continue
				}
				for j, i := range batch {
					all := append(slices.Clone(held[i]), ws[j]...)
					d, good := rule.Date(vs[i], all, now)
					if len(good) == 0 {
						left = append(left, i)
						continue
					}
					if out[i].d != archive.Fetched {
						out[i].d = d
					}
					out[i].ws = good
					// Kept if this node holds the version (AddWitnesses
					// refuses otherwise).
					if added, _, err := sv.Store.AddWitnesses(ctx, vs[i], ws[j]); err == nil {
						sv.fetched.Add(int64(added))
					}
				}
			}
			idx = left
			if len(idx) == 0 {
				break
			}
		}
	}
	for i, v := range vs {
		sv.remember(v, out[i], now)
	}
	return out
}

func keyOf(v archive.Version) cacheKey {
	return cacheKey{key: v.Key, digest: v.Digest, time: v.Time.UnixNano()}
}

// remember keeps the verdict vd on v (see DateAll for how long).
func (sv *Service) remember(v archive.Version, vd verdict, now time.Time) {
	switch vd.d {
	case archive.Pending:
		vd.until = v.Time.Add(archive.MaxWitnessDelay)
	case archive.Unwitnessed:
		vd.until = now.Add(negativeTTL)
	case archive.Imported:
		if len(vd.ws) == 0 && v.Imported != nil { // shown while the import is recent: judged again then
			vd.until = v.Imported.At.Add(archive.MaxWitnessDelay)
		}
	default:
		vd.until = time.Time{}
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.cache == nil || len(sv.cache) >= cacheSize {
		sv.cache = make(map[cacheKey]verdict) // a crude bound: start over
	}
	sv.cache[keyOf(v)] = vd
}

// Reader is what an Archive wraps and is: the versions of a URL and the
// version for a time, as the gateway's Archive reads them (package node
// asserts that Archive is one).
type Reader interface {
	// Versions returns the versions of url, oldest first.
	Versions(ctx context.Context, url string) ([]archive.Version, error)
	// Get returns the version of url for t and its capture.
	Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error)
}

// Archive is a gateway archive that leaves out every version whose date
// no independent holder vouches for (Service.Date).
type Archive struct {
	Inner   Reader
	Witness *Service
}

var _ Reader = (*Archive)(nil)

// Versions implements Reader: Inner's versions of url that are
// shown as of their dates.
func (a *Archive) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	vs, err := a.Inner.Versions(ctx, url)
	if err != nil {
		return nil, err
	}
	out := vs[:0:0]
	ds := a.Witness.DateAll(ctx, vs)
	for i, v := range vs {
		if ds[i].Shown() {
			out = append(out, v)
		} else {
			a.Witness.hidden.Add(1)
		}
	}
	return out, nil
}

// Get implements Reader: the version Inner picks for t when it is
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
