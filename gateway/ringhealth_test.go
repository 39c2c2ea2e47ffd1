package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/ringview"
)

// TestRingHealth checks the /ring page's headline and rows: nodes up of
// those listed, versions below k summed over the nodes that answered, the
// warning when fewer nodes are up than k, dead and departed nodes greyed
// with since when, short peer ids, formatted bytes and crawl days, and
// the legend.
func TestRingHealth(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	view := ringview.View{
		Self: "12D3KooWSelfSelfSelfSelfAAAAAAAA",
		K:    3,
		Peers: []ringview.PeerSummary{
			{Peer: "12D3KooWSelfSelfSelfSelfAAAAAAAA", Addr: "127.0.0.1:4001", State: "up", BelowK: 400, Bytes: 3 << 20, Day: 20818, DayStart: time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)},
			{Peer: "12D3KooWOtherOtherOtherBBBBBBBB", Addr: "127.0.0.2:4001", State: "up", BelowK: 12, Bytes: 1536},
			{Peer: "12D3KooWDeadDeadDeadDeadCCCCCCCC", Addr: "127.0.0.3:4001", State: "dead", Since: now.Add(-3 * time.Minute), BelowK: 99},
			{Peer: "12D3KooWGoneGoneGoneGoneDDDDDDDD", Addr: "127.0.0.4:4001", State: "departed", Since: now.Add(-26 * time.Hour)},
		},
	}
	h := view.Health()
	if got, want := h.Headline(), "2 of 4 nodes up · every version has fewer than k = 3 copies"; got != want {
		t.Errorf("headline %q, want %q", got, want)
	}
	if h.BelowK != 412 {
		t.Errorf("below k summed over the nodes up: %d, want 412", h.BelowK)
	}
	view.K = 2
	if got, want := view.Health().Headline(), "2 of 4 nodes up · 412 versions with fewer than k = 2 copies"; got != want {
		t.Errorf("headline %q, want %q", got, want)
	}
	view.K = 3
	if got, want := h.Warning(), "Only 2 nodes up, fewer than k = 3: no version can have 3 copies until more nodes join the ring."; got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
	view.K = 2
	if w := view.Health().Warning(); w != "" {
		t.Errorf("k = 2 with 2 nodes up: warning %q", w)
	}
	view.K = 3
	s := newServer(t, newFake(), func(c *Config) { c.Ring, c.PublicStatus = func(context.Context) ringview.View { return view }, true })
	body := get(t, s, "/ring").Body.String()
	for _, want := range []string{
		"<b>2 of 4 nodes up · every version has fewer than k = 3 copies</b>",
		`<p class="err">Only 2 nodes up, fewer than k = 3`,
		`<tr class="down">`, "<b>dead</b><br><span class=\"muted\">since 2029-12-31 23:57:00 UTC (3 min ago)</span>",
		"<b>departed</b><br><span class=\"muted\">since 2029-12-30 22:00:00 UTC (26.0 h ago)</span>",
		`<code title="12D3KooWDeadDeadDeadDeadCCCCCCCC">…CCCCCCCC</code>`,
		"<td>3.0 MiB</td>", "<td>1.5 KiB</td>", `<td title="day 20818">2026-12-31</td>`,
		"What the columns mean", `<a href="/status">node status</a>`, "not in the ring",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("ring page lacks %q", want)
		}
	}
	if strings.Contains(body, "12D3KooWDeadDeadDeadDeadCCCCCCCC</code>") {
		t.Error("ring page shows a whole peer id")
	}
}

// TestStatusPage checks /status: the status as HTML, sections per part,
// bytes, counts and times formatted, lists of records as tables, a link
// to the JSON; private like /api/status.
func TestStatusPage(t *testing.T) {
	type part struct {
		Versions int64     `json:"versions"`
		Bytes    int64     `json:"bytes"`
		Last     time.Time `json:"last"`
		Inner    struct {
			Lag float64 `json:"lag_sec"`
		} `json:"inner"`
	}
	st := struct {
		Peer    string                      `json:"peer"`
		Archive part                        `json:"archive"`
		Wire    []map[string]any            `json:"wire"`
		Empty   map[string]int              `json:"empty"`
		Tags    []string                    `json:"tags"`
		Nested  map[string]map[string]int64 `json:"nested"`
	}{
		Peer:    "peerA<script>",
		Archive: part{Versions: 1234567, Bytes: 5 << 30, Last: time.Date(2026, 11, 28, 10, 15, 3, 0, time.UTC)},
		Wire:    []map[string]any{{"protocol": "/herod/a", "in": 10}, {"protocol": "/herod/b", "out": 20}},
		Tags:    []string{"x", "y"},
		Nested:  map[string]map[string]int64{"a": {"b": 7}},
	}
	st.Archive.Inner.Lag = 1.5
	s := newServer(t, newFake(), func(c *Config) { c.Status, c.PublicStatus = func(context.Context) any { return st }, true })
	w := get(t, s, "/status")
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("/status: %d", w.Code)
	}
	for _, want := range []string{
		`<a href="/api/status">JSON</a>`, "<h2>node</h2>", "<th>peer</th><td>peerA&lt;script&gt;</td>",
		"<h2>archive</h2>", "<th>versions</th><td>1\u202f234\u202f567</td>", "<th>bytes</th><td>5.0 GiB</td>",
		"<th>last</th><td>2026-11-28 10:15:03 UTC</td>", "<th>inner.lag_sec</th><td>1.5</td>",
		"<th>in</th><th>protocol</th><th>out</th>", "<td></td><td>/herod/b</td><td>20</td>",
		"<th>tags</th><td>x, y</td>", "<th>a.b</th><td>7</td>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/status lacks %q", want)
		}
	}
	// Private as /api/status is, to another machine.
	private := newServer(t, newFake(), func(c *Config) { c.Status = func(context.Context) any { return st } })
	if w := get(t, private, "/status"); w.Code != 403 || strings.Contains(w.Body.String(), "peerA") {
		t.Errorf("private /status from another machine: %d", w.Code)
	}
}
