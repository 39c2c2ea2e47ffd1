package gateway

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

func TestParseTimestamp(t *testing.T) {
	d := func(y int, m time.Month, day, h, min, s int) time.Time {
		return time.Date(y, m, day, h, min, s, 0, time.UTC)
	}
	// e is the end of the second d names: where an upper bound lands.
	e := func(y int, m time.Month, day, h, min, s int) time.Time {
		return time.Date(y, m, day, h, min, s, 999999999, time.UTC)
	}
	for _, tc := range []struct {
		in       string
		up, down time.Time
		err      bool
	}{
		{in: "20141226095010", up: e(2014, 12, 26, 9, 50, 10), down: d(2014, 12, 26, 9, 50, 10)},
		{in: "2014122609501", up: e(2014, 12, 26, 9, 50, 59), down: d(2014, 12, 26, 9, 50, 0)},
		{in: "201412260", up: e(2014, 12, 26, 23, 59, 59), down: d(2014, 12, 26, 0, 0, 0)},
		{in: "20141", up: e(2014, 12, 31, 23, 59, 59), down: d(2014, 11, 1, 0, 0, 0)},
		{in: "201412260950", up: e(2014, 12, 26, 9, 50, 59), down: d(2014, 12, 26, 9, 50, 0)},
		{in: "2014122609", up: e(2014, 12, 26, 9, 59, 59), down: d(2014, 12, 26, 9, 0, 0)},
		{in: "20141226", up: e(2014, 12, 26, 23, 59, 59), down: d(2014, 12, 26, 0, 0, 0)},
		{in: "201402", up: e(2014, 2, 28, 23, 59, 59), down: d(2014, 2, 1, 0, 0, 0)},
		{in: "201602", up: e(2016, 2, 29, 23, 59, 59), down: d(2016, 2, 1, 0, 0, 0)},
		{in: "2014", up: e(2014, 12, 31, 23, 59, 59), down: d(2014, 1, 1, 0, 0, 0)},
		{in: "20", up: e(2099, 12, 31, 23, 59, 59), down: d(2000, 1, 1, 0, 0, 0)},
		{in: "201413", up: e(2014, 12, 31, 23, 59, 59), down: d(2014, 12, 1, 0, 0, 0)},
		{in: "20140231", up: e(2014, 2, 28, 23, 59, 59), down: d(2014, 2, 28, 0, 0, 0)},
		{in: "20140100", up: e(2014, 1, 1, 23, 59, 59), down: d(2014, 1, 1, 0, 0, 0)},
		{in: "20141226999999", up: e(2014, 12, 26, 23, 59, 59), down: d(2014, 12, 26, 23, 59, 59)},
		{in: "20141226095010123", up: d(2014, 12, 26, 9, 50, 10).Add(123999999), down: d(2014, 12, 26, 9, 50, 10).Add(123 * time.Millisecond)},
		{in: "201412260950101", up: d(2014, 12, 26, 9, 50, 10).Add(199999999), down: d(2014, 12, 26, 9, 50, 10).Add(100 * time.Millisecond)},
		{in: "", err: true},
		{in: "201412260950101234", err: true},
		{in: "2014-12", err: true},
		{in: "２０１４", err: true},
	} {
		up, err := ParseTimestamp(tc.in)
		down, err2 := ParseTimestampFrom(tc.in)
		if tc.err {
			if !errors.Is(err, ErrTimestamp) || !errors.Is(err2, ErrTimestamp) {
				t.Errorf("%q: errors %v, %v; want ErrTimestamp", tc.in, err, err2)
			}
			continue
		}
		if err != nil || err2 != nil {
			t.Errorf("%q: %v %v", tc.in, err, err2)
			continue
		}
		if !up.Equal(tc.up) || !down.Equal(tc.down) {
			t.Errorf("%q: up %v down %v, want %v %v", tc.in, up, down, tc.up, tc.down)
		}
	}
	if got := FormatTimestamp(time.Date(2014, 12, 26, 9, 50, 10, 0, time.FixedZone("x", 3600))); got != "20141226085010" {
		t.Errorf("FormatTimestamp = %q", got)
	}
}

func TestParseWebPath(t *testing.T) {
	for _, tc := range []struct {
		rest, query string
		want        Target
		err         bool
	}{
		{rest: "20140101000000/http://example.com/a", want: Target{Kind: KindReplay, TS: "20140101000000", URL: "http://example.com/a"}},
		{rest: "2014/http:/example.com/a", want: Target{Kind: KindReplay, TS: "2014", URL: "http://example.com/a"}},
		{rest: "2014/https:///Example.COM:443/a/../b", want: Target{Kind: KindReplay, TS: "2014", URL: "https://example.com/b"}},
		{rest: "2014/example.com", want: Target{Kind: KindReplay, TS: "2014", URL: "http://example.com/"}},
		{rest: "2014/example.com:8080/x", want: Target{Kind: KindReplay, TS: "2014", URL: "http://example.com:8080/x"}},
		{rest: "2014/localhost:8080/x", want: Target{Kind: KindReplay, TS: "2014", URL: "http://localhost:8080/x"}},
		{rest: "2014/HTTP://example.com/", want: Target{Kind: KindReplay, TS: "2014", URL: "http://example.com/"}},
		{rest: "2014//example.com/", want: Target{Kind: KindReplay, TS: "2014", URL: "http://example.com/"}},
		{rest: "2014/http%3A%2F%2Fexample.com%2Fa", want: Target{Kind: KindReplay, TS: "2014", URL: "http://example.com/a"}},
		{rest: "2014/http://b%C3%BCcher.de/a%2Fb//c", want: Target{Kind: KindReplay, TS: "2014", URL: "http://xn--bcher-kva.de/a%2Fb//c"}}, // the crawl's key
		{rest: "2014/http://example.com/s", query: "q=1&r=2", want: Target{Kind: KindReplay, TS: "2014", URL: "http://example.com/s?q=1&r=2"}},
		{rest: "2014id_/http://example.com/", want: Target{Kind: KindReplay, TS: "2014", Mod: "id_", URL: "http://example.com/"}},
		{rest: "20140101000000im_/http://example.com/i.png", want: Target{Kind: KindReplay, TS: "20140101000000", Mod: "im_", URL: "http://example.com/i.png"}},
		{rest: "*/example.com", want: Target{Kind: KindDates, URL: "http://example.com/"}},
		{rest: "2014*/http://example.com/", want: Target{Kind: KindDates, URL: "http://example.com/"}},
		{rest: "*/http://example.com/dir/*", want: Target{Kind: KindPrefix, URL: "http://example.com/dir/"}},
		{rest: "*/Example.COM*", want: Target{Kind: KindPrefix, URL: "http://example.com/"}},
		{rest: "http://example.com/x/*", want: Target{Kind: KindPrefix, URL: "http://example.com/x/"}},
		{rest: "http://example.com/", want: Target{Kind: KindLatest, URL: "http://example.com/"}},
		{rest: "example.com", want: Target{Kind: KindLatest, URL: "http://example.com/"}},
		{rest: "123.example.com/", want: Target{Kind: KindLatest, URL: "http://123.example.com/"}},
		{rest: "2014/ftp://example.com/", err: true},
		{rest: "2014/mailto:a@example.com", err: true},
		{rest: "2014/javascript:alert(1)", err: true},
		{rest: "2014/", err: true},
		{rest: "*/", err: true},
		{rest: "20141301000000000000/http://example.com/", err: true},
		{rest: "20140101zz/http://example.com/", err: true},
		{rest: "2014/http://" + strings.Repeat("x", 8000), err: true},
		{rest: "2014/http://[::1", err: true},
		{rest: "2014/http://", err: true},
	} {
		got, err := ParseWebPath(tc.rest, tc.query)
		if tc.err {
			if err == nil {
				t.Errorf("%.60q: got %+v, want an error", tc.rest, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%.60q: %v", tc.rest, err)
			continue
		}
		got.Time = time.Time{}
		if got != tc.want {
			t.Errorf("%.60q: got %+v, want %+v", tc.rest, got, tc.want)
		}
	}
}

func TestArchivedURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"example.com", "http://example.com/"},
		{"https:/example.com/a#frag", "https://example.com/a"},
		{"http:example.com", "http://example.com/"},
		{"  http://EXAMPLE.com:80/  ", "http://example.com/"},
		{"ftp://example.com", ""},
		{"data:text/html,hi", ""},
		{"", ""},
	} {
		got, err := ArchivedURL(tc.in)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("ArchivedURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseWebPath(f *testing.F) {
	for _, s := range []string{
		"2014/http://example.com/", "*/example.com", "2014id_/http:/a.b/c?d", "*/http://x/*",
		"http%3A%2F%2Fa.b", "20140101000000000/", "://", "2014/[::1]:80/", "9999999999999999/a",
	} {
		f.Add(s, "")
		f.Add(s, "a=b&c")
	}
	f.Fuzz(func(t *testing.T, rest, query string) {
		tg, err := ParseWebPath(rest, query)
		if err != nil {
			return
		}
		switch tg.Kind {
		case KindReplay:
			if tg.Time.IsZero() || !isTimestamp(tg.TS) {
				t.Fatalf("replay target without time: %+v", tg)
			}
			fallthrough
		case KindLatest, KindDates:
			if c, err := ArchivedURL(tg.URL); err != nil || c != tg.URL {
				t.Fatalf("URL %q is not canonical: %q %v", tg.URL, c, err)
			}
		}
	})
}

func FuzzParseTimestamp(f *testing.F) {
	for _, s := range []string{"2014", "20141226095010", "201402", "0", "99999999999999", "00000000000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		up, err := ParseTimestamp(s)
		down, err2 := ParseTimestampFrom(s)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("%q: %v vs %v", s, err, err2)
		}
		if err == nil && up.Before(down) {
			t.Fatalf("%q: upper %v before lower %v", s, up, down)
		}
	})
}

// TestTimestampNamesItsCapture checks that the timestamp written for each
// capture (VersionTimestamp) selects that capture again, whatever its
// sub-second time: four captures in one minute, two of them in one second
// (issue 35: a 14-digit timestamp read as hh:mm:ss.000 opened the capture
// before).
func TestTimestampNamesItsCapture(t *testing.T) {
	base := time.Date(2026, 11, 28, 10, 15, 0, 0, time.UTC)
	vs := []archive.Version{
		{Time: base.Add(-24 * time.Hour)},
		{Time: base.Add(3*time.Second + 412*time.Millisecond)},
		{Time: base.Add(21*time.Second + 5*time.Millisecond)},
		{Time: base.Add(21*time.Second + 870*time.Millisecond)},
		{Time: base.Add(58*time.Second + 999*time.Millisecond)},
	}
	want := []string{"20261127101500", "20261128101503", "20261128101521005", "20261128101521870", "20261128101558"}
	for i := range vs {
		ts := VersionTimestamp(vs, i)
		if ts != want[i] {
			t.Errorf("VersionTimestamp(%d) = %q, want %q", i, ts, want[i])
		}
		at, err := ParseTimestamp(ts)
		if err != nil {
			t.Fatalf("%q: %v", ts, err)
		}
		if got := selectVersion(vs, at); got != i {
			t.Errorf("timestamp %q selects version %d, want %d", ts, got, i)
		}
		if got := selectVersion(vs, EndOfSecond(vs[i].Time.Truncate(time.Second))); i != 2 && got != i {
			t.Errorf("the second of version %d (an HTTP date) selects %d", i, got)
		}
	}
	labels := []string{"Nov 27 10:15", "Nov 28 10:15:03", "Nov 28 10:15:21.005", "Nov 28 10:15:21.870", "Nov 28 10:15:58"}
	for i := range vs {
		if got := chipLabel(vs, i); got != labels[i] {
			t.Errorf("chipLabel(%d) = %q, want %q", i, got, labels[i])
		}
	}
}
