package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive/access"
)

// fakeLinks is a LinkIndex over fixed links: one link to http://t.example/
// from day 1 to day 2, one from day 2 on (and extra more after them); a
// rank for t from day 2. With check set it lists a link only if its
// source capture at From reads through the gateway's reader.
type fakeLinks struct {
	runs  []time.Time
	asked []time.Time
	extra int
	check bool
}

var (
	linkDay1 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	linkDay2 = time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
)

func (f *fakeLinks) Links(ctx context.Context, u string, at time.Time, offset, limit int, src CaptureReader) (LinksAnswer, error) {
	f.asked = append(f.asked, at)
	all := []Link{
		{Source: "http://old.example/", Anchor: "old <b>text</b>", From: linkDay1, Until: linkDay2},
		{Source: "http://new.example/", Anchor: "new", From: linkDay2},
	}
	for i := range f.extra {
		all = append(all, Link{Source: fmt.Sprintf("http://x%03d.example/", i), From: linkDay2})
	}
	res := LinksAnswer{URL: u, Links: []Link{}}
	var live []Link
	for _, l := range all {
		if at.IsZero() || (!at.Before(l.From) && (l.Until.IsZero() || at.Before(l.Until))) {
			live = append(live, l)
		}
	}
	for i, l := range live {
		switch {
		case i < offset:
		case len(res.Links) == limit:
			res.More++
			if res.Next == 0 {
				res.Next = i
			}
		case f.check:
			if _, _, err := src.Get(ctx, l.Source, l.From); err != nil {
				res.Unchecked++
				continue
			}
			fallthrough
		default:
			res.Links = append(res.Links, l)
		}
	}
	return res, nil
}

func (f *fakeLinks) Rank(_ context.Context, u string, at time.Time) (RankAnswer, error) {
	if u != "http://t.example/" || at.Before(linkDay2) {
		return RankAnswer{}, fmt.Errorf("fake: %w", ErrNoRank)
	}
	return RankAnswer{URL: u, Rank: 0.25, Day: linkDay2.Truncate(24 * time.Hour), Run: "r1"}, nil
}

func (f *fakeLinks) RunRank(_ context.Context, day time.Time) (any, error) {
	f.runs = append(f.runs, day)
	return map[string]any{"day": day}, nil
}

func TestLinksPage(t *testing.T) {
	f := &fakeLinks{}
	a := newFake()
	a.add(t, "http://t.example/", "20260102090000", 200, "text/html", "<p>t</p>")
	s := newServer(t, a, func(c *Config) { c.LinkIndex = f; c.AdminToken = "tok" })

	for _, tc := range []struct {
		at   string
		want []string
	}{
		{"20260101", []string{"http://old.example/"}},
		{"20260102", []string{"http://new.example/"}},
		{"", []string{"http://old.example/", "http://new.example/"}},
	} {
		w := getUI(t, s, "/links?url=http://t.example/&output=json&at="+tc.at)
		var res LinksAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || w.Code != 200 {
			t.Fatalf("at %q: %d %v %s", tc.at, w.Code, err, w.Body)
		}
		var got []string
		for _, l := range res.Links {
			got = append(got, l.Source)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("at %q: %v, want %v", tc.at, got, tc.want)
		}
	}
	// The HTML page escapes anchors and shows the rank.
	w := getUI(t, s, "/links?url=http://t.example/&at=20260102")
	if b := w.Body.String(); w.Code != 200 || !strings.Contains(b, "PageRank 0.25") || !strings.Contains(b, "new.example") {
		t.Errorf("links page: %d\n%s", w.Code, b)
	}
	if w := getUI(t, s, "/links?url=http://t.example/"); !strings.Contains(w.Body.String(), "old &lt;b&gt;text&lt;/b&gt;") {
		t.Errorf("anchor not escaped:\n%s", w.Body)
	}
	for _, bad := range []string{"/links?url=nope", "/links?url=http://t.example/&at=2026x", "/api/rank?url=ftp://x/"} {
		if w := getUI(t, s, bad); w.Code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, w.Code)
		}
	}
	// The calendar lists the links as of the newest capture (day 2).
	w = getUI(t, s, "/web/*/http://t.example/")
	if b := w.Body.String(); !strings.Contains(b, "Pages linking here as of 2026-01-02") || !strings.Contains(b, "“new”") || strings.Contains(b, "old.example") {
		t.Errorf("calendar panel:\n%s", b)
	}
	// GET /api/rank: the rank, or 404 when no run ranked the URL.
	var rk RankAnswer
	if w := getUI(t, s, "/api/rank?url=http://t.example/"); w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &rk) != nil || rk.Rank != 0.25 {
		t.Errorf("rank: %d %s", w.Code, w.Body)
	}
	if w := getUI(t, s, "/api/rank?url=http://t.example/&at=20260101"); w.Code != http.StatusNotFound {
		t.Errorf("rank before any run: %d, want 404", w.Code)
	}
	// POST /api/rank runs, with the admin token only.
	post := func(target string, hdr ...string) int {
		r := httptest.NewRequest(http.MethodPost, uiOrigin+target, nil)
		r.RemoteAddr = "127.0.0.1:5555"
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	if c := post("/api/rank"); c != http.StatusUnauthorized || len(f.runs) != 0 {
		t.Errorf("run without token: %d, %d runs", c, len(f.runs))
	}
	if c := post("/api/rank?day=20260102", "Authorization", "Bearer tok"); c != 200 || len(f.runs) != 1 || !f.runs[0].Equal(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("run: %d, runs %v", c, f.runs)
	}
	// Without a link index the endpoints are absent.
	off := newServer(t, newFake())
	if w := getUI(t, off, "/links?url=http://t.example/"); w.Code != http.StatusNotFound {
		t.Errorf("no link index: %d", w.Code)
	}
}

func TestCDXRankField(t *testing.T) {
	a := newFake()
	a.add(t, "http://t.example/", "20260101090000", 200, "text/html", "<p>1</p>")
	a.add(t, "http://t.example/", "20260102090000", 200, "text/html", "<p>2</p>")
	s := newServer(t, &listingArchive{fakeArchive: a}, func(c *Config) { c.LinkIndex = &fakeLinks{} })
	w := getUI(t, s, "/cdx?url=http://t.example/&fl=timestamp,rank")
	if got := strings.TrimSpace(w.Body.String()); got != "20260101090000 -\n20260102090000 0.25" {
		t.Errorf("cdx with rank:\n%s", got)
	}
	w = getUI(t, s, "/cdx?url=http://t.example/&fl=timestamp&filter=rank:0.25")
	if got := strings.TrimSpace(w.Body.String()); got != "20260102090000" {
		t.Errorf("cdx filtered on rank:\n%s", got)
	}
}

// TestLinksPages: /links lists linksPage links a page, with a link to
// the next; the offset is bounded.
func TestLinksPages(t *testing.T) {
	f := &fakeLinks{extra: 2 * linksPage}
	s := newServer(t, newFake(), func(c *Config) { c.LinkIndex = f })
	var res LinksAnswer
	w := getUI(t, s, "/links?url=http://t.example/&at=20260102&output=json")
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || len(res.Links) != linksPage || res.Next != linksPage || res.More != linksPage+1 {
		t.Fatalf("first page: %d links, next %d, more %d (%v)", len(res.Links), res.Next, res.More, err)
	}
	w = getUI(t, s, fmt.Sprintf("/links?url=http://t.example/&at=20260102&offset=%d", 2*linksPage))
	if b := w.Body.String(); w.Code != 200 || !strings.Contains(b, "x099.example") || strings.Contains(b, "x098.example") || strings.Contains(b, "next page") {
		t.Errorf("last page: %d\n%s", w.Code, b)
	}
	if w := getUI(t, s, "/links?url=http://t.example/"); !strings.Contains(w.Body.String(), "offset=50\">next page") {
		t.Errorf("no link to the next page:\n%s", w.Body)
	}
	// The pages end at maxLinksListed: the last has no next.
	f.extra = 2 * maxLinksListed
	w = getUI(t, s, fmt.Sprintf("/links?url=http://t.example/&output=json&offset=%d", maxLinksListed-linksPage))
	res = LinksAnswer{}
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || len(res.Links) != linksPage || res.Next != 0 {
		t.Errorf("last page of %d: %d links, next %d (%v)", maxLinksListed, len(res.Links), res.Next, err)
	}
	for _, bad := range []string{"-1", "x", "1000"} {
		if w := getUI(t, s, "/links?url=http://t.example/&offset="+bad); w.Code != http.StatusBadRequest {
			t.Errorf("offset %s: %d, want 400", bad, w.Code)
		}
	}
}

// TestLinksReadThroughReplay: the link index checks its records through
// the archive replay reads from: a source capture the access rules keep
// from readers is not read, and its link is not listed, on /links and on
// the calendar, which says how many it left out.
func TestLinksReadThroughReplay(t *testing.T) {
	a := newFake()
	a.add(t, "http://t.example/", "20260102090000", 200, "text/html", "<p>t</p>")
	a.add(t, "http://old.example/", "20260101090000", 200, "text/html", `<a href="http://t.example/">old</a>`)
	a.add(t, "http://new.example/", "20260102090000", 200, "text/html", `<a href="http://t.example/">new</a>`)
	f := &fakeLinks{check: true}
	s := newServer(t, a, func(c *Config) {
		c.LinkIndex = f
		c.Access = newTableAccess(c.Now, access.Rule{URL: "http://new.example/", Exact: true, Action: access.Block})
	})
	var res LinksAnswer
	w := getUI(t, s, "/links?url=http://t.example/&output=json")
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || len(res.Links) != 1 || res.Links[0].Source != "http://old.example/" || res.Unchecked != 1 {
		t.Fatalf("links: %+v (%v)", res, err)
	}
	if b := getUI(t, s, "/web/*/http://t.example/").Body.String(); strings.Contains(b, "new.example") || !strings.Contains(b, "1 not shown") {
		t.Errorf("calendar lists a link whose source is blocked:\n%s", b)
	}
}
