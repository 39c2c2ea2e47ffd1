package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
)

// The list of dates of a URL (/web/*/<url>) as a calendar that scales to
// a page crawled every day for years: per year, a bar row of its twelve
// months (captures per month); per month with captures, a grid of its
// days, each day linking to its newest capture, and the month's chips,
// folded for all but the newest months of a long history.

// Checker is what the list of dates asks of an Archive that also knows
// when URLs were fetched and found unchanged (no version stored); the
// node implements it.
type Checker interface {
	// Checks returns the times url was checked and found unchanged,
	// oldest first; none when it knows of none.
	Checks(ctx context.Context, url string) ([]time.Time, error)
}

type captureLink struct {
	TS, Label string
	Status    int
	Class     int  // status class: 2, 3, 4, 5
	Browser   bool // captured in a browser (archive.Version.Browser)
	// Shot is the address of the capture's screenshot (screenshots.go),
	// "" when it has none.
	Shot string
}

// dayCell is one day of a month grid: Day 0 pads the first week.
type dayCell struct {
	Day, Count int
	Unchanged  int    // checks that found the page unchanged
	TS         string // the day's newest capture, or its check
	Title      string
}

// monthBar is one month of a year's bar row.
type monthBar struct {
	Name, Anchor string
	Count        int // versions and unchanged checks
	Changed      int // versions
	Height       int // bar height in percent of the year's busiest month
}

type monthGroup struct {
	Name, Anchor string
	Count        int  // versions
	Unchanged    int  // checks that found it unchanged
	Open         bool // unfolded
	Weeks        [][7]dayCell
	Captures     []captureLink
}

type yearGroup struct {
	Year, Count int // versions
	Unchanged   int // checks that found it unchanged
	Bars        [12]monthBar
	Months      []monthGroup
}

type datesData struct {
	URL         string
	Count       int // versions
	First, Last string
	// Checks counts every fetch that found the page (its versions and
	// the unchanged checks), LastChecked the newest; zero without a
	// Checker.
	Checks      int
	LastChecked string
	Years       []yearGroup
	// Inlinks lists pages linking to the URL as of its newest capture
	// (links.go); nil without a link index.
	Inlinks *inlinksPanel
}

// openCaptures is the size of a history whose months are all shown
// unfolded; a longer one unfolds its newest openMonths months.
const (
	openCaptures = 100
	openMonths   = 2
)

// groupDates groups versions (oldest first) and the unchanged checks
// (oldest first) by year and month, in chronological order, as a
// calendar.
func groupDates(u string, vs []archive.Version, checks []time.Time) datesData {
	d := datesData{URL: u, Count: len(vs)}
	if len(vs) == 0 {
		return d
	}
	d.First = vs[0].Time.UTC().Format(time.DateTime)
	d.Last = vs[len(vs)-1].Time.UTC().Format(time.DateTime)
	if len(checks) > 0 {
		d.Checks = len(vs) + len(checks)
		last := vs[len(vs)-1].Time
		if c := checks[len(checks)-1]; c.After(last) {
			last = c
		}
		d.LastChecked = last.UTC().Format("2006-01-02 15:04")
	}
	month := func(t time.Time) *monthGroup {
		if n := len(d.Years); n == 0 || d.Years[n-1].Year != t.Year() {
			d.Years = append(d.Years, newYear(t.Year()))
		}
		y := &d.Years[len(d.Years)-1]
		y.Bars[t.Month()-1].Count++
		if n := len(y.Months); n == 0 || y.Months[n-1].Name != t.Month().String() {
			y.Months = append(y.Months, newMonth(t))
		}
		return &y.Months[len(y.Months)-1]
	}
	ci := 0
	for i := range vs {
		t := vs[i].Time.UTC()
		for ; ci < len(checks) && checks[ci].Before(vs[i].Time); ci++ {
			d.addCheck(month(checks[ci].UTC()), checks[ci].UTC())
		}
		m := month(t)
		y := &d.Years[len(d.Years)-1]
		y.Count++
		y.Bars[t.Month()-1].Changed++
		m.Count++
		c := captureLink{TS: VersionTimestamp(vs, i), Label: chipLabel(vs, i), Status: vs[i].Status, Class: vs[i].Status / 100, Browser: vs[i].Browser}
		m.Captures = append(m.Captures, c)
		cell := m.day(t.Day())
		cell.Count++
		cell.TS = c.TS
		cell.Title = dayTitle(cell, t)
	}
	for ; ci < len(checks); ci++ {
		d.addCheck(month(checks[ci].UTC()), checks[ci].UTC())
	}
	months := 0
	for yi := len(d.Years) - 1; yi >= 0; yi-- {
		y := &d.Years[yi]
		busiest := 0
		for _, b := range y.Bars {
			busiest = max(busiest, b.Count)
		}
		for i := range y.Bars {
			if busiest > 0 {
				y.Bars[i].Height = (y.Bars[i].Count*100 + busiest - 1) / busiest
			}
		}
		for mi := len(y.Months) - 1; mi >= 0; mi-- {
			y.Months[mi].Open = len(vs)+len(checks) <= openCaptures || months < openMonths
			months++
		}
	}
	return d
}

// addCheck counts a check at t that found the page unchanged in month m
// (of the last year of d).
func (d *datesData) addCheck(m *monthGroup, t time.Time) {
	d.Years[len(d.Years)-1].Unchanged++
	m.Unchanged++
	cell := m.day(t.Day())
	cell.Unchanged++
	if cell.Count == 0 {
		cell.TS = FormatTimestamp(t) // the version in force then
	}
	cell.Title = dayTitle(cell, t)
}

// dayTitle says what a day of the grid holds.
func dayTitle(c *dayCell, t time.Time) string {
	var parts []string
	if c.Count > 0 {
		parts = append(parts, fmt.Sprintf("%d new version%s", c.Count, plural(c.Count)))
	}
	switch {
	case c.Unchanged == 1:
		parts = append(parts, "checked unchanged")
	case c.Unchanged > 1:
		parts = append(parts, fmt.Sprintf("checked unchanged %d times", c.Unchanged))
	}
	return strings.Join(parts, ", ") + "; last at " + t.Format(time.TimeOnly) + " UTC"
}

// newYear returns the group of year y, its bars named.
func newYear(y int) yearGroup {
	g := yearGroup{Year: y}
	for m := range g.Bars {
		g.Bars[m].Name = time.Month(m + 1).String()[:3]
		g.Bars[m].Anchor = fmt.Sprintf("m%d-%02d", y, m+1)
	}
	return g
}

// newMonth returns the group of t's month, with its grid of days (weeks
// from Monday).
func newMonth(t time.Time) monthGroup {
	first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	g := monthGroup{Name: t.Month().String(), Anchor: fmt.Sprintf("m%d-%02d", t.Year(), int(t.Month()))}
	pad := (int(first.Weekday()) + 6) % 7 // days before the 1st in its week, from Monday
	days := daysIn(t.Year(), t.Month())
	for i := 0; i < pad+days; i += 7 {
		var w [7]dayCell
		for j := range w {
			if d := i + j - pad + 1; d >= 1 && d <= days {
				w[j].Day = d
			}
		}
		g.Weeks = append(g.Weeks, w)
	}
	return g
}

// day returns the cell of day d of the month.
func (m *monthGroup) day(d int) *dayCell {
	for wi := range m.Weeks {
		for j := range m.Weeks[wi] {
			if m.Weeks[wi][j].Day == d {
				return &m.Weeks[wi][j]
			}
		}
	}
	panic("gateway: no such day in the month")
}

// ErrDate reports a date of the home form that herod cannot read.
var ErrDate = errors.New("gateway: unreadable date")

// dateLayouts are the forms the home form's date takes, besides digits
// alone (a Wayback timestamp): what <input type=date> sends, and the same
// with a time.
var dateLayouts = []string{"2006-01-02", "2006-01", "2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

// parseFormDate reads the date of the home form as a Wayback timestamp:
// "" (none), 1 to 17 digits (the banner's form holds the capture's
// timestamp, to the millisecond when two captures share a second), or a date as <input type=date> sends it,
// 2026-11-28 (with an optional time). Anything else, such as 28/11/2026,
// is an error that says which forms are read.
func parseFormDate(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if len(s) <= 17 && isTimestamp(s) {
		if _, err := ParseTimestamp(s); err == nil {
			return s, nil
		}
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			ts := FormatTimestamp(t)
			switch l {
			case "2006-01":
				return ts[:6], nil
			case "2006-01-02":
				return ts[:8], nil
			}
			return ts, nil
		}
	}
	return "", fmt.Errorf("%w %.40q: write it year first, as 2026-11-28 (or 20261128, or 2026 for the year)", ErrDate, s)
}
