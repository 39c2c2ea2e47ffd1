package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// demoRow is one node's line of the demo's progress table.
type demoRow struct {
	Gateway                             string // the node's gateway URL, as printed above the table
	Queued, Fetched, New, NotMod, Unchg int64
	Errors                              map[string]int64 // by kind (crawl.Kind*)
	Stored                              int64
	Idle                                bool
	DayStarted                          time.Time // when the node began its crawl day
}

// demoView shows the demo's progress. On a terminal it keeps one block —
// the table and a line on the day's crawl — under what was printed
// before, and redraws it in place; events (a new day of the sample web,
// a day's crawl complete) are printed above it and stay. Elsewhere (a
// pipe, a file) it appends the table when it changes, and the events.
type demoView struct {
	w     io.Writer
	tty   bool
	drawn int    // lines of the block on screen (tty)
	last  string // the block on screen (tty), the table last appended (not tty)

	day       int       // the sample web's day shown
	dayFrom   time.Time // when the day's crawl could start: the seed, or the day's switch
	busy      bool      // the ring was seen crawling this day
	idleTicks int       // consecutive snapshots with every node idle
	reported  int       // the last day reported complete (-1: none)
	took      time.Duration
	next      time.Time // when the next day starts
}

func newDemoView(w io.Writer, tty bool, seeded time.Time, next time.Time) *demoView {
	return &demoView{w: w, tty: tty, dayFrom: seeded, reported: -1, next: next}
}

// newDay records that the sample web moved to day d at now (pages it will
// store anew) and prints it.
func (v *demoView) newDay(now time.Time, d, changed int, next time.Time) {
	v.day, v.dayFrom, v.busy, v.idleTicks, v.next = d, now, false, 0, next
	v.event(fmt.Sprintf("--- sample web day %d: %d pages changed; the ring crawls every page again", d, changed))
}

// update takes a snapshot of the nodes at now and shows it. A day is
// complete once the ring was seen crawling it and then every node was
// idle twice in a row; the time it took runs from the day's start (the
// seed on day 0) to the first idle snapshot.
func (v *demoView) update(now time.Time, rows []demoRow) {
	idle := true
	var stored int64
	start := v.dayFrom
	for _, r := range rows {
		idle = idle && r.Idle
		stored += r.Stored
		if r.DayStarted.After(start) {
			start = r.DayStarted
		}
	}
	switch {
	case !idle:
		v.busy, v.idleTicks = true, 0
	case v.busy:
		if v.idleTicks == 0 {
			v.took = now.Sub(start)
		}
		v.idleTicks++
	}
	if v.busy && v.idleTicks >= 2 && v.reported != v.day {
		v.reported = v.day
		v.event(fmt.Sprintf("=== day %d crawl complete in %s: %d versions stored on the %d nodes", v.day, v.took.Round(100*time.Millisecond), stored, len(rows)))
	}
	table := demoTable(rows)
	if !v.tty {
		if table != v.last {
			v.last = table
			fmt.Fprint(v.w, table)
		}
		return
	}
	if block := table + v.dayLine(now, start); block != v.last || v.drawn == 0 {
		v.last = block
		v.draw(block)
	}
}

// dayLine is the block's last line: where the day's crawl is.
func (v *demoView) dayLine(now, start time.Time) string {
	next := ""
	if !v.next.IsZero() && v.next.After(now) {
		next = fmt.Sprintf("; day %d starts in %s", v.day+1, v.next.Sub(now).Round(time.Second))
	}
	if v.reported == v.day {
		return fmt.Sprintf("day %d crawl complete in %s%s\n", v.day, v.took.Round(100*time.Millisecond), next)
	}
	if !v.busy {
		return fmt.Sprintf("day %d: waiting for the crawl to start%s\n", v.day, next)
	}
	return fmt.Sprintf("day %d: crawling for %s%s\n", v.day, now.Sub(start).Round(time.Second), next)
}

// event prints a line that stays: above the block on a terminal.
func (v *demoView) event(line string) {
	if v.tty {
		v.erase()
	}
	fmt.Fprintln(v.w, line)
}

// erase moves the cursor to the block's first line and clears to the end
// of the screen.
func (v *demoView) erase() {
	if v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\r\x1b[J", v.drawn)
		v.drawn = 0
	}
}

// draw replaces the block with text, in one write.
func (v *demoView) draw(text string) {
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", v.drawn)
	}
	b.WriteString(text)
	io.WriteString(v.w, b.String())
	v.drawn = strings.Count(text, "\n")
}

// demoTable formats the rows: one per node, named by its gateway URL.
func demoTable(rows []demoRow) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "gateway\tqueued\tfetched today\tnew versions\t304s\tunchanged\tstored\terrors\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Gateway, r.Queued, r.Fetched, r.New, r.NotMod, r.Unchg, r.Stored, errorKinds(r.Errors))
	}
	tw.Flush()
	return b.String()
}

// errorKinds writes errors by kind, most first: "timeout 2, robots 1",
// or "none".
func errorKinds(m map[string]int64) string {
	kinds := slices.Collect(maps.Keys(m))
	kinds = slices.DeleteFunc(kinds, func(k string) bool { return m[k] == 0 })
	if len(kinds) == 0 {
		return "none"
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
