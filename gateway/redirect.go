package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// redirectWindow is how long after a redirect's capture a capture of its
// target still counts as the page the redirect led to that day: the
// crawler fetches a redirect's target after the redirect, within the same
// crawl day (24 hours by default).
const redirectWindow = 24 * time.Hour

// redirectLocation returns the Location of the redirect capture v,
// replayed for t, rewritten into the archive: at t's timestamp and
// modifier, so that a chain of redirects stays at one date, unless the
// target replayed at that timestamp would be a capture older than the
// redirect while the target was captured within redirectWindow after it
// (the crawler fetched the redirect, then its target, seconds later, and
// the reader asked for the redirect's own timestamp). The Location then
// names that capture's timestamp: the page the redirect led to, found
// from either URL. A target the archive cannot list keeps t's timestamp.
func (s *Server) redirectLocation(ctx context.Context, rw *Rewriter, loc string, t Target, v archive.Version) string {
	ref := strings.Trim(loc, " \t\n\r\f")
	if i := strings.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i]
	}
	target, err := canon.Resolve(rw.Base, ref)
	if err != nil || target == t.URL {
		return rw.URL(loc, t.Mod)
	}
	vs, err := s.cfg.Archive.Versions(ctx, target)
	if err != nil || len(vs) == 0 {
		return rw.URL(loc, t.Mod)
	}
	if cur := vs[selectVersion(vs, t.Time)]; !cur.Time.Before(v.Time) {
		return rw.URL(loc, t.Mod) // the target at t is already the redirect's or newer
	}
	for j, tv := range vs {
		if tv.Time.Before(v.Time) {
			continue
		}
		if tv.Time.Sub(v.Time) > redirectWindow {
			break
		}
		at := *rw
		at.TS = VersionTimestamp(vs, j)
		return at.URL(loc, t.Mod)
	}
	return rw.URL(loc, t.Mod)
}
