package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// TestMementoNamesItsCapture checks over HTTP that, for captures with
// sub-second times, four of them in one minute, every way the gateway
// names a capture opens that capture: the list of dates' chips, the
// TimeMap's mementos, the banner's previous and next links, and the
// TimeGate given a capture's own Memento-Datetime (issue 35).
func TestMementoNamesItsCapture(t *testing.T) {
	const u = "http://example.com/minute"
	f := newFake()
	base := time.Date(2026, 11, 28, 10, 15, 0, 0, time.UTC)
	times := []time.Time{
		base.Add(-time.Hour + 500*time.Millisecond),
		base.Add(3*time.Second + 412*time.Millisecond),
		base.Add(21*time.Second + 5*time.Millisecond),
		base.Add(21*time.Second + 870*time.Millisecond),
		base.Add(58*time.Second + 999*time.Millisecond),
	}
	for i, tm := range times {
		f.put(t, &archive.Capture{URL: u, Time: tm, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprintf("<p>capture %d</p>", i))})
	}
	s := newServer(t, f)
	// opens returns the capture the replay of path shows, checking that
	// its Memento-Datetime names it.
	opens := func(path string) int {
		t.Helper()
		w := getContent(t, s, path)
		if w.Code != 200 {
			t.Fatalf("%s: %d", path, w.Code)
		}
		var n int
		if _, err := fmt.Sscanf(w.Body.String()[strings.Index(w.Body.String(), "capture "):], "capture %d", &n); err != nil {
			t.Fatalf("%s: %v in %q", path, err, w.Body.String())
		}
		if got, want := w.Header().Get("Memento-Datetime"), httpDate(times[n]); got != want {
			t.Errorf("%s: Memento-Datetime %q, want %q", path, got, want)
		}
		return n
	}
	dates := getUI(t, s, "/web/*/"+u).Body.String()
	timemap := get(t, s, "/timemap/link/"+u).Body.String()
	vs, _ := f.Versions(t.Context(), u)
	for i := range times {
		p := "/web/" + VersionTimestamp(vs, i) + "/" + u
		if !strings.Contains(dates, `href="`+p+`"`) {
			t.Errorf("the list of dates has no chip %s", p)
		}
		if !strings.Contains(timemap, "<"+uiOrigin+p+">") {
			t.Errorf("the TimeMap has no memento %s", p)
		}
		if got := opens(p); got != i {
			t.Errorf("chip %s opens capture %d, want %d", p, got, i)
		}
		b := bannerFor(u, vs, i)
		if b.PrevTS != "" {
			if got := opens("/web/" + b.PrevTS + "/" + u); got != i-1 {
				t.Errorf("previous of %d opens %d", i, got)
			}
		}
		if b.NextTS != "" {
			if got := opens("/web/" + b.NextTS + "/" + u); got != i+1 {
				t.Errorf("next of %d opens %d", i, got)
			}
		}
		// An HTTP date names a whole second: the TimeGate leads to the
		// capture of that second (the later one of the two sharing one).
		w := get(t, s, "/timegate/"+u, "Accept-Datetime", httpDate(times[i]))
		want := i
		if i == 2 {
			want = 3
		}
		if loc := w.Header().Get("Location"); w.Code != http.StatusFound || opens(loc) != want {
			t.Errorf("TimeGate at %s: %d %q, want capture %d", httpDate(times[i]), w.Code, loc, want)
		}
	}
}
