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
// fetched it, and who witnessed it when ("" with no Config.Provenance).
func (s *Server) provenanceLine(ctx context.Context, v archive.Version) string {
	var b strings.Builder
	if v.Peer != "" {
		b.WriteString("fetched by " + shortPeer(v.Peer))
	}
	if s.cfg.Provenance == nil {
		return b.String()
	}
	p := s.cfg.Provenance(ctx, v)
	if b.Len() > 0 {
		b.WriteString(" · ")
	}
	switch {
	case len(p.Witnesses) > 0:
		w := p.Witnesses[0]
		b.WriteString("witnessed by " + shortPeer(w.Peer) + " at " + w.Seen.UTC().Format(time.DateTime) + " UTC")
		if n := len(p.Witnesses) - 1; n > 0 {
			b.WriteString(" and " + strconv.Itoa(n) + " more")
		}
	case p.Dating == archive.Fetched.String():
		b.WriteString("fetched by this node")
	case p.Dating == archive.Pending.String():
		b.WriteString("not witnessed yet")
	default:
		b.WriteString("not witnessed")
	}
	return b.String()
}
