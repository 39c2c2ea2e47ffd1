package gateway

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/ringview"
)

// ringSize is the side of the SVG picture, in pixels; ringRadius the circle.
const (
	ringSize   = 520.0
	ringRadius = 200.0
)

type ringDot struct {
	ringview.Node
	Short, Color, Check string
	PeerShort           string
	PredShort           string
	SuccShort           []string
	X, Y                float64
	OK                  bool
}

type ringArc struct {
	D, Color, Dash string
}

type ringPeer struct {
	ringview.PeerSummary
	Color  string
	VNodes int
	Known  bool // a summary was given; otherwise its counters are unknown here
	Down   bool // unreachable, dead or departed: greyed
	// Short is the peer id shortened; Size, DayText, SinceText and Lag
	// its bytes, crawl day, state change and replication lag, formatted.
	Short, Size, DayText, SinceText, Lag string
}

type ringData struct {
	Self         string
	Health       ringview.Health
	Size, Center float64
	Radius       float64
	Dots         []ringDot
	Arcs         []ringArc
	Peers        []ringPeer
	Broken       int
}

// angle returns the position of a hex id on the circle as a fraction of a
// turn, from its top 64 bits; ok is false for a malformed id.
func angle(hexID string) (float64, bool) {
	b, err := hex.DecodeString(hexID)
	if err != nil || len(b) < 8 {
		return 0, false
	}
	return float64(binary.BigEndian.Uint64(b[:8])) / math.Exp2(64), true
}

// point returns the SVG coordinates of fraction f of a turn on a circle of
// radius r, clockwise from the top.
func point(f, r float64) (x, y float64) {
	a := 2*math.Pi*f - math.Pi/2
	return ringSize/2 + r*math.Cos(a), ringSize/2 + r*math.Sin(a)
}

// palette holds the first node colours; red is kept for broken pointers.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#bcbd22"}

// peerColors gives each real node of a view a distinct colour, in the order
// of the sorted peer ids, so a node keeps its colour as long as the set of
// nodes does not change. The first eight come from a fixed palette, the
// rest are hues a golden angle apart.
func peerColors(nodes []ringview.Node, peers []ringview.PeerSummary) map[string]string {
	var ids []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if !seen[n.Peer] {
			seen[n.Peer] = true
			ids = append(ids, n.Peer)
		}
	}
	for _, p := range peers {
		if !seen[p.Peer] {
			seen[p.Peer] = true
			ids = append(ids, p.Peer)
		}
	}
	sort.Strings(ids)
	c := make(map[string]string, len(ids))
	for i, p := range ids {
		if i < len(palette) {
			c[p] = palette[i]
		} else {
			c[p] = fmt.Sprintf("hsl(%.0f,60%%,45%%)", math.Mod(float64(i)*137.508, 360))
		}
	}
	return c
}

// buildRing computes the picture and the table, and checks each successor
// pointer against the ring the view itself describes.
func buildRing(v ringview.View, now time.Time) ringData {
	d := ringData{Self: v.Self, Health: v.Health(), Size: ringSize, Center: ringSize / 2, Radius: ringRadius}
	nodes := make([]ringview.Node, 0, len(v.Nodes))
	pos := map[string]float64{}
	for _, n := range v.Nodes {
		n.ID = strings.ToLower(n.ID)
		if f, ok := angle(n.ID); ok {
			pos[n.ID] = f
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	colors := peerColors(nodes, v.Peers)
	count := map[string]int{}
	for i, n := range nodes {
		count[n.Peer]++
		want := nodes[(i+1)%len(nodes)].ID
		dot := ringDot{Node: n, Short: short(n.ID), PeerShort: ShortPeer(n.Peer), Color: colors[n.Peer], OK: true}
		dot.X, dot.Y = point(pos[n.ID], ringRadius)
		dot.PredShort = short(n.Predecessor)
		for _, s := range n.Successors {
			dot.SuccShort = append(dot.SuccShort, short(s))
		}
		switch {
		case len(n.Successors) == 0 && !n.Local:
			// A remote virtual server's routing state is not known here:
			// neither agreement nor disagreement can be shown.
			dot.Check = "not known here"
		case len(n.Successors) == 0:
			dot.Check = "no successor"
			dot.OK = false
		case strings.ToLower(n.Successors[0]) != want:
			dot.Check = "successor should be " + short(want)
			dot.OK = false
		default:
			dot.Check = "ok"
		}
		if !dot.OK {
			d.Broken++
		}
		d.Dots = append(d.Dots, dot)
		if len(n.Successors) > 0 {
			if f, ok := angle(strings.ToLower(n.Successors[0])); ok {
				arc := ringArc{D: arcPath(pos[n.ID], f, ringRadius-14), Color: dot.Color}
				if !dot.OK {
					arc.Color, arc.Dash = "#c0392b", "6 4"
				}
				d.Arcs = append(d.Arcs, arc)
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range v.Peers {
		seen[p.Peer] = true
		d.Peers = append(d.Peers, newRingPeer(p, true, colors[p.Peer], count[p.Peer], now))
	}
	for _, n := range nodes {
		if !seen[n.Peer] {
			seen[n.Peer] = true
			d.Peers = append(d.Peers, newRingPeer(ringview.PeerSummary{Peer: n.Peer, Addr: n.Addr}, false, colors[n.Peer], count[n.Peer], now))
		}
	}
	return d
}

// newRingPeer is a row of the nodes' table, formatted; summarized tells
// whether p is a summary the view gave (else only its address is known).
func newRingPeer(p ringview.PeerSummary, summarized bool, color string, vnodes int, now time.Time) ringPeer {
	down := p.State != "up" && p.State != ""
	rp := ringPeer{PeerSummary: p, Color: color, VNodes: vnodes, Known: summarized && !down, Down: down, Short: ShortPeer(p.Peer), Size: FormatBytes(p.Bytes), DayText: FormatDay(p.DayStart), Lag: formatLag(p.LagSec)}
	if !p.Since.IsZero() {
		rp.SinceText = FormatSince(p.Since, now)
	}
	return rp
}

// formatLag writes a lag in seconds in the unit that reads best.
func formatLag(sec float64) string {
	switch {
	case sec < 120:
		return fmt.Sprintf("%.0f s", sec)
	case sec < 2*3600:
		return fmt.Sprintf("%.0f min", sec/60)
	}
	return fmt.Sprintf("%.1f h", sec/3600)
}

// ShortPeer abbreviates a libp2p peer id to its last 8 characters (ids
// of Ed25519 keys all start with "12D3KooW").
func ShortPeer(p string) string {
	if len(p) <= 10 {
		return p
	}
	return "…" + p[len(p)-8:]
}

// FormatBytes writes n bytes in binary units: "512 B", "3.4 MiB".
func FormatBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f, units := float64(n), []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f < 10 {
		return fmt.Sprintf("%.1f %s", f, units[i])
	}
	return fmt.Sprintf("%.0f %s", f, units[i])
}

// FormatDay writes the start of a crawl day: its date, with the time when
// days are shorter than a calendar day ("" for the zero time).
func FormatDay(start time.Time) string {
	if start.IsZero() {
		return ""
	}
	start = start.UTC()
	if start.Hour() == 0 && start.Minute() == 0 && start.Second() == 0 {
		return start.Format(time.DateOnly)
	}
	return start.Format("2006-01-02 15:04:05")
}

// FormatSince writes when something happened, and how long before now:
// "10:15:03 UTC (3 min ago)" the same day, "2026-11-27 10:15:03 UTC
// (24.0 h ago)" before.
func FormatSince(t, now time.Time) string {
	ago := now.Sub(t).Round(time.Second)
	var rel string
	switch {
	case ago < time.Minute:
		rel = fmt.Sprintf("%d s ago", int(ago.Seconds()))
	case ago < time.Hour:
		rel = fmt.Sprintf("%d min ago", int(ago.Minutes()))
	case ago < 48*time.Hour:
		rel = fmt.Sprintf("%.1f h ago", ago.Hours())
	default:
		rel = fmt.Sprintf("%d days ago", int(ago.Hours()/24))
	}
	layout := "2006-01-02 15:04:05"
	if y, m, d := t.UTC().Date(); now.UTC().Year() == y && now.UTC().Month() == m && now.UTC().Day() == d {
		layout = time.TimeOnly
	}
	return t.UTC().Format(layout) + " UTC (" + rel + ")"
}

// short abbreviates a hex id to its first 8 digits.
func short(hexID string) string { return strings.ToLower(hexID[:min(8, len(hexID))]) }

// arcPath is the SVG path of the clockwise arc from fraction a to fraction b
// of a turn (the whole circle when they are equal).
func arcPath(a, b, r float64) string {
	sweep := b - a
	if sweep <= 0 {
		sweep++
	}
	if sweep >= 0.999 {
		sweep = 0.999
	}
	x1, y1 := point(a, r)
	x2, y2 := point(a+sweep, r)
	large := 0
	if sweep > 0.5 {
		large = 1
	}
	return fmt.Sprintf("M%.1f %.1f A%.1f %.1f 0 %d 1 %.1f %.1f", x1, y1, r, r, large, x2, y2)
}

// serveRing renders the ring page; ?format=json returns the ringview.View.
func (s *Server) serveRing(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	v := s.cfg.Ring(ctx)
	if r.URL.Query().Get("format") == "json" {
		writeJSON(w, s.log, v)
		return
	}
	s.render(w, r, http.StatusOK, "ring", buildRing(v, s.cfg.Now()))
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
