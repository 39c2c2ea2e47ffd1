package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/archive/cdx"
)

// Access rules (archive/access) are enforced at one point: New wraps the
// Archive (and its Lister, Pager, Exporter) in a guarded archive when
// Config.Access is set, so every surface that reads versions — replay
// on both origins, id_, the list of dates, TimeMap, TimeGate, the CDX
// and its resume pages, the site listing, every export format — sees the
// same decisions:
//
//   - Versions, List and Page leave out the captures not listed (exclude,
//     purge); blocked ones stay listed;
//   - Get answers a capture not shown with a *Blocked error (the reader
//     gets its page: why, since when, 451 or 403), picking among listed
//     captures when the archive's own pick is not listed;
//   - Export passes the decision to the exporter (cdx.Query.Hide), which
//     leaves out every capture not shown.
//
// With Config.Robots, the site's current robots.txt is one more source
// of decisions, asked where no rule applies (robots.go).

// AccessControl is the node's access rules, as the gateway asks them.
type AccessControl interface {
	// Decide returns the decision for the capture of url made at t.
	Decide(url string, t time.Time) access.Decision
	// List returns the rules in force, with their sources.
	List() []access.Listed
	// Add adds r: to this node's rules file, or, with ring, as an order
	// signed by this node and spread ring-wide.
	Add(ctx context.Context, r access.Rule, ring bool) error
	// Remove removes the rules of idOrURL (an ID, a URL or a SURT
	// prefix), from the file or ring-wide, and returns how many.
	Remove(ctx context.Context, idOrURL string, ring bool) (int, error)
}

// Blocked is Archive.Get's error, through the access rules, for a capture
// that is kept but not shown.
type Blocked struct {
	URL      string
	Time     time.Time
	Decision access.Decision
}

func (b *Blocked) Error() string {
	return fmt.Sprintf("gateway: capture of %s at %s is blocked by access rule", b.URL, b.Time.UTC().Format(time.RFC3339))
}

// guardAccess wraps the server's archive, Lister and Exporter in the
// access rules; New calls it once they are set.
func (s *Server) guardAccess() {
	if s.cfg.Access == nil && s.cfg.Robots == nil {
		return
	}
	g := &guarded{inner: s.cfg.Archive, list: s.list, exp: s.exp, rules: s.cfg.Access, robots: s.cfg.Robots}
	s.cfg.Archive = g
	if s.list != nil {
		s.list = g
	}
	if s.exp != nil {
		s.exp = g
	}
}

// blockedPage answers a request for a capture the rules keep from
// readers: the rule's status and a page saying why and since when.
// It reports false for any other error.
func (s *Server) blockedPage(w http.ResponseWriter, r *http.Request, err error) bool {
	var b *Blocked
	if !errors.As(err, &b) {
		return false
	}
	if g, ok := s.cfg.Archive.(*guarded); ok {
		g.blocked.Add(1)
	}
	d := b.Decision
	msg := "This capture of " + b.URL + " (" + b.Time.UTC().Format("2 Jan 2006 15:04 UTC") + ") is kept in the archive but not shown"
	if d.Rule != nil {
		if d.Rule.Reason != "" {
			msg += ": " + d.Rule.Reason
		}
		if !d.Rule.Date.IsZero() {
			msg += ". Not shown since " + d.Rule.Date.UTC().Format("2 Jan 2006")
		}
		if d.Rule.Embargo > 0 {
			msg += ". Embargoed until " + b.Time.Add(time.Duration(d.Rule.Embargo)).UTC().Format("2 Jan 2006")
		}
	}
	s.errorPage(w, r, d.Status(), msg+".", b.URL)
	return true
}

// guarded is an Archive seen through the access rules (see above).
type guarded struct {
	inner  Archive
	list   Lister        // inner's, or nil
	exp    Exporter      // inner's, or nil
	rules  AccessControl // nil: none
	robots RobotsPolicy  // nil: robots.txt is not consulted (robots.go)

	hidden       atomic.Int64 // captures left out of listings and exports
	blocked      atomic.Int64 // readers answered with a blocked page
	robotsErrors atomic.Int64 // robots.txt look-ups that failed (capture shown)
}

// AccessStats counts what the access rules kept from readers.
type AccessStats struct {
	Hidden  int64 `json:"hidden"`  // captures left out of listings and exports
	Blocked int64 `json:"blocked"` // requests answered 451 or 403
	// RobotsErrors counts robots.txt look-ups of the replay policy
	// (Config.Robots) that failed; their captures were shown.
	RobotsErrors int64 `json:"robotsErrors,omitempty"`
}

// AccessStats returns the access rules' counters (zero without rules).
func (s *Server) AccessStats() AccessStats {
	g, ok := s.cfg.Archive.(*guarded)
	if !ok {
		return AccessStats{}
	}
	return AccessStats{Hidden: g.hidden.Load(), Blocked: g.blocked.Load(), RobotsErrors: g.robotsErrors.Load()}
}

var (
	_ Archive          = (*guarded)(nil)
	_ Lister           = (*guarded)(nil)
	_ Pager            = (*guarded)(nil)
	_ ProgressExporter = (*guarded)(nil)
	_ Checker          = (*guarded)(nil)
	_ WACZSigner       = (*guarded)(nil)
	_ Streamer         = (*guarded)(nil)
)

// listed returns the versions of vs the rules list, in order.
func (g *guarded) listed(ctx context.Context, vs []archive.Version) []archive.Version {
	return listedOf(ctx, g, vs, func(v archive.Version) (string, time.Time) { return v.URL, v.Time })
}

// listedOf returns the captures of xs (at names each one's URL and time)
// that g's rules list, in order, counting the others as hidden.
func listedOf[T any](ctx context.Context, g *guarded, xs []T, at func(T) (string, time.Time)) []T {
	out := xs[:0:0]
	for _, x := range xs {
		u, t := at(x)
		if g.decide(ctx, u, t).Listed() {
			out = append(out, x)
		}
	}
	if n := len(xs) - len(out); n > 0 {
		g.hidden.Add(int64(n))
	}
	return out
}

// Versions implements Archive: the listed versions.
func (g *guarded) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	vs, err := g.inner.Versions(ctx, url)
	if err != nil {
		return nil, err
	}
	return g.listed(ctx, vs), nil
}

// Get implements Archive: the version the inner archive picks for t if
// it is listed, else the one Versions would give; a *Blocked error if
// that one is not shown.
func (g *guarded) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	v, c, err := g.inner.Get(ctx, url, t)
	if err != nil {
		return v, c, err
	}
	d := g.decide(ctx, v.URL, v.Time)
	if !d.Listed() {
		vs, err := g.Versions(ctx, url)
		if err != nil {
			return archive.Version{}, nil, err
		}
		pick, ok := pickAt(vs, t)
		if !ok {
			return archive.Version{}, nil, fmt.Errorf("gateway: %s: %w", url, archive.ErrNotFound)
		}
		if d = g.decide(ctx, pick.URL, pick.Time); d.Shown() {
			if v, c, err = g.inner.Get(ctx, url, pick.Time); err != nil {
				return v, c, err
			}
			if !v.Time.Equal(pick.Time) || v.Digest != pick.Digest {
				return archive.Version{}, nil, fmt.Errorf("gateway: %s at %s: the archive gave another version: %w", url, pick.Time, archive.ErrNotFound)
			}
		}
		v = pick
	}
	if !d.Shown() {
		return archive.Version{}, nil, &Blocked{URL: v.URL, Time: v.Time, Decision: d}
	}
	return v, c, nil
}

// StreamAt implements Streamer: the inner archive's stream of the
// capture, when the rules show it; otherwise (or when the inner archive
// does not stream) archive.ErrNotStreamable, and Get answers, with its
// blocked page if it is one.
func (g *guarded) StreamAt(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Body, error) {
	st, ok := g.inner.(Streamer)
	if !ok {
		return archive.Version{}, nil, fmt.Errorf("gateway: %s: %w", url, archive.ErrNotStreamable)
	}
	v, b, err := st.StreamAt(ctx, url, t)
	if err != nil {
		return v, b, err
	}
	if !g.decide(ctx, v.URL, v.Time).Shown() {
		b.Close()
		return archive.Version{}, nil, fmt.Errorf("gateway: %s: %w", url, archive.ErrNotStreamable)
	}
	return v, b, nil
}

// pickAt returns the newest of vs (oldest first) not after t, or the
// oldest when all are after it.
func pickAt(vs []archive.Version, t time.Time) (archive.Version, bool) {
	if len(vs) == 0 {
		return archive.Version{}, false
	}
	best := vs[0]
	for _, v := range vs[1:] {
		if !v.Time.After(t) {
			best = v
		}
	}
	return best, true
}

// List implements Lister: the listed versions the inner Lister returns.
func (g *guarded) List(ctx context.Context, q cdx.Query) ([]archive.Version, error) {
	if g.list == nil {
		return nil, fmt.Errorf("%w: matchType=%s", ErrNoListing, q.Match)
	}
	vs, err := g.list.List(ctx, q)
	if err != nil {
		return nil, err
	}
	return g.listed(ctx, vs), nil
}

// Page implements Pager: the inner Pager's pages (or a listPager's) less
// the rows not listed. A page whose rows are all left out is followed by
// the next, so a caller never gets an empty page with more to come.
func (g *guarded) Page(ctx context.Context, req cdx.PageRequest) ([]cdx.Row, bool, error) {
	var pg Pager = listPager{a: g.inner, list: g.list}
	if p, ok := g.inner.(Pager); ok {
		pg = p
	}
	for {
		rows, more, err := pg.Page(ctx, req)
		if err != nil || len(rows) == 0 {
			return rows, more, err
		}
		out := listedOf(ctx, g, rows, func(r cdx.Row) (string, time.Time) { return r.URL, r.Time })
		if len(out) > 0 || !more {
			return out, more, nil
		}
		k := cdx.KeyOf(rows[len(rows)-1].Version)
		req.After = &k
	}
}

// Export implements Exporter: the inner export less the captures not
// shown (cdx.Query.Hide).
func (g *guarded) Export(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string) error {
	if g.exp == nil {
		return fmt.Errorf("gateway: export: %w", ErrNoListing)
	}
	q.Hide = &exportHider{ctx: ctx, g: g}
	return g.exp.Export(ctx, q, w, resumeAfter)
}

// ExportProgress implements ProgressExporter, as Export; an inner
// exporter without progress reports none.
func (g *guarded) ExportProgress(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string, progress func(cursor string)) error {
	pe, ok := g.exp.(ProgressExporter)
	if !ok {
		return g.Export(ctx, q, w, resumeAfter)
	}
	q.Hide = &exportHider{ctx: ctx, g: g}
	return pe.ExportProgress(ctx, q, w, resumeAfter, progress)
}

// Checks implements Checker: the inner archive's checks, none if it
// knows none or the URL has no listed version.
func (g *guarded) Checks(ctx context.Context, url string) ([]time.Time, error) {
	c, ok := g.inner.(Checker)
	if !ok {
		return nil, nil
	}
	return c.Checks(ctx, url)
}

// ExportSigner implements WACZSigner: the inner archive's signer, if any.
func (g *guarded) ExportSigner() archive.Signer {
	if s, ok := g.inner.(WACZSigner); ok {
		return s.ExportSigner()
	}
	return nil
}
