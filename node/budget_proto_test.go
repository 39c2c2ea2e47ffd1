package node

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/wire"
)

func TestBudgetRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  budgetRequest
		ok   bool
	}{
		{"plain", budgetRequest{Host: "example.org", Slots: 4, Interval: time.Second}, true},
		{"port", budgetRequest{Host: "127.0.0.1:8080", Slots: maxLeaseSlots, Interval: time.Millisecond}, true},
		{"empty host", budgetRequest{Slots: 1, Interval: time.Second}, false},
		{"long host", budgetRequest{Host: strings.Repeat("a", 5000), Slots: 1, Interval: time.Second}, false},
		{"no slots", budgetRequest{Host: "h", Slots: 0, Interval: time.Second}, false},
		{"too many slots", budgetRequest{Host: "h", Slots: maxLeaseSlots + 1, Interval: time.Second}, false},
		{"zero interval", budgetRequest{Host: "h", Slots: 1}, false},
		{"negative interval", budgetRequest{Host: "h", Slots: 1, Interval: -time.Second}, false},
		{"interval over a day", budgetRequest{Host: "h", Slots: 1, Interval: 25 * time.Hour}, false},
		{"spacing", budgetRequest{Host: "h", Slots: 2, Interval: time.Second, Spacing: 3 * time.Second}, true},
		{"negative spacing", budgetRequest{Host: "h", Slots: 1, Interval: time.Second, Spacing: -1}, false},
		{"spacing over a day", budgetRequest{Host: "h", Slots: 1, Interval: time.Second, Spacing: 25 * time.Hour}, false},
	} {
		if err := tc.req.validate(); (err == nil) != tc.ok {
			t.Errorf("%s: validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestBudgetReplyValidate(t *testing.T) {
	req := budgetRequest{Host: "h", Slots: 3, Interval: time.Second}
	for _, tc := range []struct {
		name string
		rep  budgetReply
		ok   bool
	}{
		{"grant", budgetReply{Delays: slotMs(0, 1000, 2000)}, true},
		{"retry", budgetReply{RetryAfter: time.Second}, true},
		{"too many", budgetReply{Delays: slotMs(0, 1, 2, 3)}, false},
		{"negative delay", budgetReply{Delays: slotMs(-1)}, false},
		{"out of order", budgetReply{Delays: slotMs(5, 2)}, false},
		{"far future", budgetReply{Delays: []time.Duration{48 * time.Hour}}, false},
		{"negative retry", budgetReply{RetryAfter: -time.Second}, false},
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
		budgetRequest{Host: "example.org", Slots: 4, Interval: time.Second},
		budgetRequest{Host: "example.org", Slots: 64, Interval: time.Millisecond, Spacing: 7 * time.Millisecond},
		budgetReply{Delays: slotMs(0, 50, 100)},
		budgetReply{RetryAfter: time.Second},
		budgetReply{NotOwner: true},
	} {
		var buf bytes.Buffer
		if err := wire.WriteJSON(&buf, v); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		var req budgetRequest
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), maxBudgetFrame, &req); err == nil && req.validate() == nil {
			if req.Slots < 1 || req.Slots > maxLeaseSlots || req.Interval <= 0 || req.Host == "" {
				t.Fatalf("invalid request validated: %+v", req)
			}
			g := newSlotAllocator(time.Now).allocate(req.Host, "", req.Slots, req.Interval, req.Spacing)
			if len(g.Delays) == 0 || len(g.Delays) > req.Slots {
				t.Fatalf("fresh schedule granted %d of %d slots", len(g.Delays), req.Slots)
			}
		}
		var rep budgetReply
		asked := budgetRequest{Host: "h", Slots: maxLeaseSlots, Interval: time.Second}
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), maxBudgetFrame, &rep); err == nil && rep.validate(asked) == nil {
			for i, d := range rep.Delays {
				if d < 0 || (i > 0 && d < rep.Delays[i-1]) {
					t.Fatalf("invalid reply validated: %+v", rep)
				}
			}
		}
	})
}
