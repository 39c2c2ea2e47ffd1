package gateway

import (
	"context"
	"time"

	"github.com/herod-archive/herod/archive"
)

// Screenshots. A page captured in a browser comes with a screenshot, a
// resource record at archive.ScreenshotURL(page) ("urn:view:<page>").
// The gateway serves it as any capture, under its own URL
// (/web/<ts>id_/urn:view:<page> on the content origin, shown or hidden
// with its page by the access rules), and the list of dates shows each
// capture's screenshot, when it has one, as a thumbnail of its chip.

// screenshots returns the timestamp of the screenshot of each version of
// u (vs, oldest first) that has one, by the version's timestamp
// (VersionTimestamp). It asks the archive for the screenshots only when
// some version was captured in a browser; a failure to list them leaves
// the thumbnails out.
func (s *Server) screenshots(ctx context.Context, u string, vs []archive.Version) map[string]string {
	browser := false
	for _, v := range vs {
		browser = browser || v.Browser
	}
	if !browser {
		return nil
	}
	shots, err := s.cfg.Archive.Versions(ctx, archive.ScreenshotURL(u))
	if err != nil {
		s.log.Debug("gateway: screenshots", "url", u, "err", err)
		return nil
	}
	out := map[string]string{}
	for i, v := range vs {
		if !v.Browser {
			continue
		}
		var next time.Time
		if i+1 < len(vs) {
			next = vs[i+1].Time
		}
		shot, ok := archive.ScreenshotOf(shots, v.Time, next)
		for j := range shots {
			if ok && shots[j].Time.Equal(shot.Time) && shots[j].Digest == shot.Digest {
				out[VersionTimestamp(vs, i)] = VersionTimestamp(shots, j)
				break
			}
		}
	}
	return out
}

// addShots sets the Shot of each capture chip of d whose timestamp shots
// names: the screenshot's raw replay on the content origin.
func (d *datesData) addShots(shots map[string]string, content string) {
	if len(shots) == 0 {
		return
	}
	for yi := range d.Years {
		for mi := range d.Years[yi].Months {
			caps := d.Years[yi].Months[mi].Captures
			for ci := range caps {
				if ts, ok := shots[caps[ci].TS]; ok {
					caps[ci].Shot = content + webPath(ts, ModRaw, archive.ScreenshotURL(d.URL))
				}
			}
		}
	}
}
