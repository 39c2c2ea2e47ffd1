package witness

import (
	"context"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/ring"
)

// Run calls CatchUp every Every until ctx ends.
func (sv *Service) Run(ctx context.Context) {
	every := sv.Every
	if every <= 0 {
		every = DefaultEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := sv.CatchUp(ctx); err != nil && ctx.Err() == nil {
			sv.log().Warn("witness: catch-up pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// CatchUp makes one pass over the versions this node imported too late to
// witness them itself (archive.Store.Undated), at most catchUpMax of
// them: it asks their other holders for their statements and stores
// those that verify. It returns how many versions it dated. Versions no
// holder can date (back-dated ones among them) stay undated and hidden,
// and are asked about again in the next pass.
func (sv *Service) CatchUp(ctx context.Context) (int, error) {
	var cursor []byte
	dated, left, seen := 0, 0, 0
	for seen < catchUpMax {
		vs, next, err := sv.Store.Undated(ctx, cursor, catchUpBatch)
		if err != nil {
			return dated, err
		}
		seen += len(vs)
		byHolder := map[string][]archive.Version{}
		contacts := map[string]ring.Contact{}
		for _, v := range vs {
			for _, c := range sv.others(ctx, v.Key) {
				byHolder[c.Peer] = append(byHolder[c.Peer], v)
				contacts[c.Peer] = c
			}
		}
		done := map[archive.Entry]bool{}
		for p, hvs := range byHolder {
			ws, err := sv.Ask(ctx, contacts[p], hvs)
			if err != nil {
				sv.log().Debug("witness: ask", "holder", contacts[p].Addr, "err", err)
				continue
			}
			for i, v := range hvs {
				if len(ws[i]) == 0 {
					continue
				}
				added, bad, err := sv.Store.AddWitnesses(ctx, v, ws[i])
				if err != nil {
					return dated, err
				}
				sv.fetched.Add(int64(added))
				sv.refused.Add(int64(bad))
				if added > 0 && !done[v.Entry()] {
					held, err := sv.Store.Witnesses(ctx, v)
					if err != nil {
						return dated, err
					}
					if d, _ := sv.Store.Rule(nil).Date(v, held, sv.now()); d == archive.Witnessed {
						done[v.Entry()] = true
						dated++
					}
				}
			}
		}
		left += len(vs) - len(done)
		if next == nil {
			break
		}
		cursor = next
	}
	sv.undated.Store(int64(left))
	now := sv.now()
	sv.lastPass.Store(&now)
	return dated, nil
}
