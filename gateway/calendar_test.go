package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

func TestParseFormDate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{" 2026-11-28 ", "20261128"},
		{"2026-11", "202611"},
		{"2026-11-28T10:15", "20261128101500"},
		{"2026-11-28 10:15:03", "20261128101503"},
		{"2026", "2026"},
		{"20261128101503", "20261128101503"},
		{"20261128101503412", "20261128101503412"},
	} {
		if got, err := parseFormDate(tc.in); err != nil || got != tc.want {
			t.Errorf("parseFormDate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"28/11/2026", "yesterday", "2026-13-01", "202611281015031234", "11/28/2026"} {
		if got, err := parseFormDate(in); !errors.Is(err, ErrDate) || !strings.Contains(err.Error(), "2026-11-28") {
			t.Errorf("parseFormDate(%q) = %q, %v; want ErrDate naming the form to use", in, got, err)
		}
	}
}

// TestHomeFormBadDate: a date that does not parse gets a 400 page that
// says how to write it and keeps the URL in the form, instead of a replay
// at a wrong date (28/11/2026 was read as the year 2811).
func TestHomeFormBadDate(t *testing.T) {
	s := newServer(t, sampleArchive(t))
	w := get(t, s, "/?url=example.com&date=28%2F11%2F2026")
	body := w.Body.String()
	if w.Code != http.StatusBadRequest || !strings.Contains(body, "write it year first, as 2026-11-28") || !strings.Contains(body, `value="example.com"`) {
		t.Errorf("bad date: %d\n%s", w.Code, body)
	}
	if w := get(t, s, "/"); !strings.Contains(w.Body.String(), `<input type="date" name="date"`) {
		t.Error("the home form has no date input")
	}
}

// TestCalendar: a page checked daily for two years reads as a year
// overview (captures per month, bars scaled to the busiest month) and
// month grids whose days link to their newest capture, with the newest
// months unfolded; captures sharing a minute are told apart to the
// second.
func TestCalendar(t *testing.T) {
	var vs []archive.Version
	start := time.Date(2025, 1, 1, 6, 0, 0, 0, time.UTC)
	for d := 0; d < 700; d++ {
		vs = append(vs, archive.Version{Time: start.AddDate(0, 0, d), Status: 200})
	}
	// Three more on the last day, in one minute.
	last := vs[len(vs)-1].Time
	for _, s := range []int{10, 20, 30} {
		vs = append(vs, archive.Version{Time: last.Add(time.Hour + time.Duration(s)*time.Second), Status: 200})
	}
	d := groupDates("http://example.com/", vs, nil)
	if len(d.Years) != 2 || d.Years[0].Count != 365 || d.Count != 703 {
		t.Fatalf("years %d, first %d, count %d", len(d.Years), d.Years[0].Count, d.Count)
	}
	y := d.Years[0]
	if y.Bars[0].Count != 31 || y.Bars[0].Height != 100 || y.Bars[1].Count != 28 || y.Bars[1].Height != 91 || y.Bars[1].Anchor != "m2025-02" {
		t.Errorf("2025 bars: %+v %+v", y.Bars[0], y.Bars[1])
	}
	open := 0
	for _, yg := range d.Years {
		for _, m := range yg.Months {
			if m.Open {
				open++
			}
		}
	}
	newest := d.Years[1].Months[len(d.Years[1].Months)-1]
	if open != openMonths || !newest.Open {
		t.Errorf("%d months unfolded, want the newest %d", open, openMonths)
	}
	// December 2026 starts on a Tuesday: Monday pads its first week.
	if newest.Name != "December" || newest.Weeks[0][1].Day != 1 || newest.Weeks[0][0].Day != 0 || len(newest.Weeks) != 5 {
		t.Errorf("December 2026 grid: %+v", newest.Weeks)
	}
	if cell := newest.day(1); cell.Count != 4 || cell.TS != "20261201070030" {
		t.Errorf("its first day: %+v, want 4 captures linking to the newest", cell)
	}
	caps := newest.Captures
	if got := caps[len(caps)-1].Label; got != "Dec 1 07:00:30" {
		t.Errorf("a capture sharing its minute: %q", got)
	}
	s := newServer(t, newFake())
	body := renderString(t, s, "dates", d)
	for _, want := range []string{`<a role="listitem" href="#m2025-02" title="28 captures in Feb"><span class="bar" style="height:91%">`,
		`<details class="month" id="m2025-02">`, `<sup>4</sup>`, "2026 <span class=\"muted\">· 338 captures"} {
		if !strings.Contains(body, want) {
			t.Errorf("calendar lacks %q", want)
		}
	}
}

// renderString renders the page template name with data.
func renderString(t *testing.T, s *Server, name string, data any) string {
	t.Helper()
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkingArchive is a fakeArchive that also knows unchanged checks.
type checkingArchive struct {
	*fakeArchive
	checks []time.Time
}

func (a checkingArchive) Checks(context.Context, string) ([]time.Time, error) { return a.checks, nil }

// TestCalendarCountsChecks: a page checked daily for 30 days and changed
// 3 times reads "Checked 30 times, changed 3 times", its days without a
// new version marked as checked unchanged, each opening the version in
// force that day (issue 35: it read "3 captures").
func TestCalendarCountsChecks(t *testing.T) {
	const u = "http://example.com/daily"
	f := newFake()
	a := checkingArchive{fakeArchive: f}
	start := time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)
	for d := 0; d < 30; d++ {
		at := start.AddDate(0, 0, d)
		if d == 0 || d == 10 || d == 20 {
			f.add(t, u, FormatTimestamp(at), 200, "text/html", fmt.Sprintf("v%d", d))
		} else {
			a.checks = append(a.checks, at)
		}
	}
	s := newServer(t, a)
	body := get(t, s, "/web/*/"+u).Body.String()
	for _, want := range []string{
		"Checked 30 times, changed 3 times (3 versions from 2026-11-01 06:00:00 to 2026-11-21 06:00:00), last checked 2026-11-30 06:00 (UTC).",
		"November</b> <span class=\"muted\">· 3 versions, 27 unchanged checks",
		`<a class="same" href="/web/20261102060000/` + u + `" title="checked unchanged; last at 06:00:00 UTC">2</a>`,
		`title="30 checks, 3 new versions in Nov"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("calendar lacks %q", want)
		}
	}
	if n := strings.Count(body, `<a class="same"`); n != 27 {
		t.Errorf("%d days marked checked unchanged, want 27", n)
	}
}
