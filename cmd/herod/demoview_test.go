package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestDemoView drives the demo's view with snapshots at fake times: on a
// terminal the block is redrawn in place (cursor up over exactly its
// lines) under what was printed, events stay above it; a day is reported
// complete once, when it ends, with the time from its start; rows are
// named by gateway URL with their error kinds. Off a terminal, plain
// lines only.
func TestDemoView(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rows := func(idle bool, fetched int64) []demoRow {
		return []demoRow{
			{Gateway: "http://127.0.0.1:5001/", Fetched: fetched, Stored: 10, Idle: idle, Errors: map[string]int64{"robots": 1, "timeout": 3, "fetch": 0}},
			{Gateway: "http://127.0.0.1:5002/", Fetched: fetched, Stored: 12, Idle: idle},
		}
	}
	for _, tty := range []bool{true, false} {
		var out bytes.Buffer
		out.WriteString("open http://127.0.0.1:5001/\n")
		v := newDemoView(&out, tty, t0, t0.Add(time.Minute))
		v.update(t0.Add(500*time.Millisecond), rows(true, 0)) // before the crawl starts: not complete
		v.update(t0.Add(time.Second), rows(false, 5))
		v.update(t0.Add(3*time.Second), rows(false, 9))
		v.update(t0.Add(4*time.Second), rows(true, 9))
		v.update(t0.Add(5*time.Second), rows(true, 9))
		v.update(t0.Add(6*time.Second), rows(true, 9))
		v.newDay(t0.Add(time.Minute), 1, 7, t0.Add(2*time.Minute))
		v.update(t0.Add(time.Minute+time.Second), rows(true, 9)) // the nodes' day has not started yet
		s := out.String()
		if n := strings.Count(s, "=== day 0 crawl complete in 4s: 22 versions stored on the 2 nodes\n"); n != 1 {
			t.Errorf("tty %v: day 0 reported complete %d times, want once, in 4s:\n%s", tty, n, s)
		}
		if strings.Contains(s, "day 1 crawl complete") || !strings.Contains(s, "--- sample web day 1: 7 pages changed") {
			t.Errorf("tty %v: day 1 events wrong:\n%s", tty, s)
		}
		if !strings.Contains(s, "http://127.0.0.1:5001/  0       5              0             0     0          10      timeout 3, robots 1") ||
			!strings.Contains(s, "http://127.0.0.1:5002/  0       5              0             0     0          12      none") {
			t.Errorf("tty %v: rows not named by gateway with their error kinds:\n%s", tty, s)
		}
		if !strings.HasPrefix(s, "open http://127.0.0.1:5001/\ngateway ") {
			t.Errorf("tty %v: the block does not start under what was printed:\n%q", tty, s)
		}
		if !tty {
			if strings.Contains(s, "\x1b") {
				t.Errorf("escape sequences off a terminal:\n%q", s)
			}
			continue
		}
		// Every redraw moves up over the block's 4 lines (header, 2 rows, day line).
		if ups := strings.Count(s, "\x1b[4A\r\x1b[J"); ups < 4 || strings.Count(s, "\x1b[") != 2*ups {
			t.Errorf("%d redraws over 4 lines, escapes %d:\n%q", ups, strings.Count(s, "\x1b["), s)
		}
		if !strings.HasSuffix(s, "day 1: waiting for the crawl to start; day 2 starts in 59s\n") {
			t.Errorf("last line: %q", s[strings.LastIndexByte(s[:len(s)-1], '\n')+1:])
		}
	}
}
