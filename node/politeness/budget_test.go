package politeness

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/internal/wire"
)

func TestBudgetRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  BudgetRequest
		ok   bool
	}{
		{"plain", BudgetRequest{Host: "example.org", Slots: 4, Interval: time.Second}, true},
		{"port", BudgetRequest{Host: "127.0.0.1:8080", Slots: maxLeaseSlots, Interval: time.Millisecond}, true},
		{"empty host", BudgetRequest{Slots: 1, Interval: time.Second}, false},
		{"long host", BudgetRequest{Host: strings.Repeat("a", 5000), Slots: 1, Interval: time.Second}, false},
		{"no slots", BudgetRequest{Host: "h", Slots: 0, Interval: time.Second}, false},
		{"too many slots", BudgetRequest{Host: "h", Slots: maxLeaseSlots + 1, Interval: time.Second}, false},
		{"zero interval", BudgetRequest{Host: "h", Slots: 1}, false},
		{"negative interval", BudgetRequest{Host: "h", Slots: 1, Interval: -time.Second}, false},
		{"interval over a day", BudgetRequest{Host: "h", Slots: 1, Interval: 25 * time.Hour}, false},
		{"spacing", BudgetRequest{Host: "h", Slots: 2, Interval: time.Second, Spacing: 3 * time.Second}, true},
		{"negative spacing", BudgetRequest{Host: "h", Slots: 1, Interval: time.Second, Spacing: -1}, false},
		{"spacing over a day", BudgetRequest{Host: "h", Slots: 1, Interval: time.Second, Spacing: 25 * time.Hour}, false},
	} {
		if err := tc.req.validate(); (err == nil) != tc.ok {
			t.Errorf("%s: validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestBudgetReplyValidate(t *testing.T) {
	req := BudgetRequest{Host: "h", Slots: 3, Interval: time.Second}
	for _, tc := range []struct {
		name string
		rep  BudgetReply
		ok   bool
	}{
		{"grant", BudgetReply{Delays: slotMs(0, 1000, 2000)}, true},
		{"retry", BudgetReply{RetryAfter: time.Second}, true},
		{"too many", BudgetReply{Delays: slotMs(0, 1, 2, 3)}, false},
		{"negative delay", BudgetReply{Delays: slotMs(-1)}, false},
		{"out of order", BudgetReply{Delays: slotMs(5, 2)}, false},
		{"far future", BudgetReply{Delays: []time.Duration{48 * time.Hour}}, false},
		{"negative retry", BudgetReply{RetryAfter: -time.Second}, false},
	} {
		if err := tc.rep.validate(req); (err == nil) != tc.ok {
			t.Errorf("%s: validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// FuzzBudgetFrames feeds arbitrary frames to the budget protocol's
// decoders: they must never panic, and whatever validates must be within
// the limits the allocator and the lease budget rely on.
func FuzzBudgetFrames(f *testing.F) {
	for _, v := range []any{
		BudgetRequest{Host: "example.org", Slots: 4, Interval: time.Second},
		BudgetRequest{Host: "example.org", Slots: 64, Interval: time.Millisecond, Spacing: 7 * time.Millisecond},
		BudgetReply{Delays: slotMs(0, 50, 100)},
		BudgetReply{RetryAfter: time.Second},
		BudgetReply{NotOwner: true},
	} {
		var buf bytes.Buffer
		if err := wire.WriteJSON(&buf, v); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		var req BudgetRequest
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), maxBudgetFrame, &req); err == nil && req.validate() == nil {
			if req.Slots < 1 || req.Slots > maxLeaseSlots || req.Interval <= 0 || req.Host == "" {
				t.Fatalf("invalid request validated: %+v", req)
			}
			g := newSlotAllocator(time.Now).allocate(req.Host, "", req.Slots, req.Interval, req.Spacing)
			if len(g.Delays) == 0 || len(g.Delays) > req.Slots {
				t.Fatalf("fresh schedule granted %d of %d slots", len(g.Delays), req.Slots)
			}
		}
		var rep BudgetReply
		asked := BudgetRequest{Host: "h", Slots: maxLeaseSlots, Interval: time.Second}
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), maxBudgetFrame, &rep); err == nil && rep.validate(asked) == nil {
			for i, d := range rep.Delays {
				if d < 0 || (i > 0 && d < rep.Delays[i-1]) {
					t.Fatalf("invalid reply validated: %+v", rep)
				}
			}
		}
	})
}

// TestRequesterGroupsByAddress checks whom lease requests count against:
// identities at one IPv4 address (any port, TCP or QUIC) or in one IPv6
// /64 are one requester; other addresses are others; a connection without
// an IP counts by peer id.
func TestRequesterGroupsByAddress(t *testing.T) {
	who := func(addr string) string {
		t.Helper()
		a, err := ma.NewMultiaddr(addr)
		if err != nil {
			t.Fatal(err)
		}
		return requester(a, "peer-"+addr)
	}
	same := [][2]string{
		{"/ip4/203.0.113.7/tcp/4001", "/ip4/203.0.113.7/tcp/4002"},
		{"/ip4/203.0.113.7/tcp/4001", "/ip4/203.0.113.7/udp/4001/quic-v1"},
		{"/ip6/2001:db8:1:2::1/tcp/1", "/ip6/2001:db8:1:2:ffff::9/tcp/2"},
	}
	for _, p := range same {
		if a, b := who(p[0]), who(p[1]); a != b {
			t.Errorf("%s and %s count apart: %q, %q", p[0], p[1], a, b)
		}
	}
	differ := [][2]string{
		{"/ip4/203.0.113.7/tcp/4001", "/ip4/203.0.113.8/tcp/4001"},
		{"/ip6/2001:db8:1:2::1/tcp/1", "/ip6/2001:db8:1:3::1/tcp/1"},
		{"/dns4/example.org/tcp/1", "/dns4/example.net/tcp/1"}, // no IP: by peer id
	}
	for _, p := range differ {
		if a, b := who(p[0]), who(p[1]); a == b {
			t.Errorf("%s and %s count as one: %q", p[0], p[1], a)
		}
	}
	// Two identities at one address hold one share between them.
	a := newSlotAllocator(func() time.Time { return time.Unix(1000, 0) })
	x, y := who("/ip4/203.0.113.7/tcp/1"), who("/ip4/203.0.113.7/tcp/2")
	first := a.allocate("h.example", x, maxLeaseSlots, time.Second, 0)
	second := a.allocate("h.example", y, maxLeaseSlots, time.Second, 0)
	other := a.allocate("h.example", who("/ip4/198.51.100.1/tcp/1"), maxLeaseSlots, time.Second, 0)
	if len(first.Delays) == 0 || len(second.Delays) != 0 || len(other.Delays) == 0 {
		t.Errorf("grants: first %d, second identity at the same address %d, another address %d",
			len(first.Delays), len(second.Delays), len(other.Delays))
	}
}
