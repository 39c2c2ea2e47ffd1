package gateway

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
)

// Provenance is who vouches for a capture, as the banner says: the peer
// that fetched and signed it (archive.Version.Peer), how the node dates it (archive.Dating: "fetched" here, "witnessed" by another
// holder, "pending" while too recent to judge) and the holders that
// witnessed it, earliest first.
type Provenance struct {
	Dating    string
	Witnesses []archive.Witness
}

// shortPeer abbreviates a libp2p peer id for people: its first 6 and
// last 4 characters.
func shortPeer(p string) string {
	if len(p) <= 12 {
		return p
	}
	return p[:6] + "…" + p[len(p)-4:]
}

// provenanceLine returns the banner's account of v's provenance: who
// fetched it — "captured in a browser" for a capture made as a browser
// rendered the page (archive.Version.Browser) — and who witnessed it
// when ("" with neither a peer, the browser nor Config.Provenance).
func (s *Server) provenanceLine(ctx context.Context, v archive.Version) string {
	var p Provenance
	if s.cfg.Provenance != nil {
		p = s.cfg.Provenance(ctx, v)
	}
	if v.Imported != nil { // imported.go
		return importedLine(v, p)
	}
	var b strings.Builder
	how := "fetched"
	if v.Browser {
		how = "captured in a browser" // rendered, its scripts run
	}
	switch {
	case p.Dating == archive.Fetched.String():
		b.WriteString(how + " by this node")
		if v.Peer != "" {
			b.WriteString(" (" + shortPeer(v.Peer) + ")")
		}
	case v.Peer != "":
		b.WriteString(how + " by " + shortPeer(v.Peer))
	case v.Browser:
		b.WriteString(how)
	}
	if s.cfg.Provenance == nil {
		return b.String()
	}
	if b.Len() > 0 {
		b.WriteString(" · ")
	}
	switch {
	case len(p.Witnesses) > 0:
		w := p.Witnesses[0]
		seen := w.Seen.UTC().Format(time.DateTime)
		if w.Seen.UTC().Format(time.DateOnly) == v.Time.UTC().Format(time.DateOnly) {
			seen = w.Seen.UTC().Format(time.TimeOnly) // the capture's day
		}
		b.WriteString("witnessed by " + shortPeer(w.Peer) + " at " + seen + " UTC")
		if n := len(p.Witnesses) - 1; n > 0 {
			b.WriteString(" and " + strconv.Itoa(n) + " more")
		}
	case p.Dating == archive.Pending.String() || (p.Dating == archive.Fetched.String() && time.Since(v.Time) <= archive.MaxWitnessDelay):
		b.WriteString("not witnessed yet")
	default:
		b.WriteString("not witnessed")
	}
	return b.String()
}
