package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive/access"
)

// fakeRobots disallows the URLs it lists (its robots.txt as fetched at
// fetched), or fails every look-up with err; it counts look-ups.
type fakeRobots struct {
	mu       sync.Mutex
	disallow map[string]bool
	fetched  time.Time
	err      error
	calls    int
}

func (f *fakeRobots) ReplayAllowed(_ context.Context, url string) (bool, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return true, time.Time{}, f.err
	}
	return !f.disallow[url], f.fetched, nil
}

// TestReplayRobots: with the robots.txt policy, the captures of a URL the
// site's current robots.txt disallows are blocked on every surface like
// an access rule's (403, a page that says why), stay listed, leave no
// export; other URLs are untouched; an access rule that applies wins.
func TestReplayRobots(t *testing.T) {
	arch := hidingArchive{multiHost(t)}
	rob := &fakeRobots{disallow: map[string]bool{page: true, "http://example.com/raw": true}, fetched: at("20260102030405")}
	s := newServer(t, arch, func(c *Config) { c.Robots = rob })
	plain := newServer(t, arch)

	for _, target := range []string{"/web/2021/" + page, "/web/20200101120000id_/" + page, "/web/2021/http://example.com/raw"} {
		w := get(t, s, target)
		body := w.Body.String()
		if w.Code != http.StatusForbidden || !strings.Contains(body, "robots.txt") || !strings.Contains(body, "2 Jan 2026") {
			t.Errorf("%s: %d %.300q", target, w.Code, body)
		}
		if strings.Contains(body, "second") || strings.Contains(body, "first") {
			t.Errorf("%s: the capture's body was served", target)
		}
	}
	if w := getUI(t, s, "/web/2021/"+page); w.Code != 200 || strings.Contains(w.Body.String(), "<title>v2") {
		t.Errorf("framed replay: %d", w.Code)
	}
	for _, target := range []string{"/web/2021/http://example.com/s.css", "/web/2021/http://other.example:8080/"} {
		if w := get(t, s, target); w.Code != 200 {
			t.Errorf("%s (allowed by robots.txt): %d", target, w.Code)
		}
	}
	// Listed, as a block rule's captures are.
	if w := get(t, s, "/web/*/"+page); w.Code != 200 || !strings.Contains(w.Body.String(), "20210615000000") {
		t.Errorf("list of dates: %d", w.Code)
	}
	if w := get(t, s, "/timemap/link/"+page); strings.Count(w.Body.String(), "datetime=") != 3 {
		t.Errorf("timemap:\n%s", w.Body.String())
	}
	if w := get(t, s, "/timegate/"+page, "Accept-Datetime", "Mon, 01 Jan 1990 00:00:00 GMT"); w.Code != 302 {
		t.Errorf("timegate: %d", w.Code)
	}
	_, all := cdxLines(t, plain, "url=example.com&matchType=domain")
	_, robots := cdxLines(t, s, "url=example.com&matchType=domain")
	if len(robots) != len(all) {
		t.Errorf("cdx: %d rows, %d without the policy", len(robots), len(all))
	}
	// Exports leave out every capture robots.txt disallows.
	_, everything, _ := exportRequest(t, plain, "prefix=http://example.com/")
	code, exported, _ := exportRequest(t, s, "prefix=http://example.com/")
	if got := strings.Join(exported, "\n"); code != 200 || len(exported) != len(everything)-4 || strings.Contains(got, "http://example.com/raw") {
		t.Errorf("export: %d, %d records of %d:\n%s", code, len(exported), len(everything), got)
	}
	if st := s.AccessStats(); st.Blocked < 3 || st.Hidden < 4 {
		t.Errorf("AccessStats = %+v", st)
	}

	// An operator's allow rule that applies wins over robots.txt; a block
	// rule keeps its own status.
	ruled := newServer(t, arch, func(c *Config) {
		c.Robots = rob
		c.Access = newTableAccess(c.Now,
			access.Rule{URL: page, Exact: true, Action: access.Allow},
			access.Rule{URL: "http://example.com/raw", Exact: true, Action: access.Block, Reason: "a legal notice"})
	})
	if w := get(t, ruled, "/web/2021/"+page); w.Code != 200 {
		t.Errorf("allow rule over robots.txt: %d", w.Code)
	}
	if w := get(t, ruled, "/web/2021/http://example.com/raw"); w.Code != 451 || !strings.Contains(w.Body.String(), "a legal notice") {
		t.Errorf("block rule over robots.txt: %d", w.Code)
	}

	// herod access check reports robots.txt's decision.
	checked := newServer(t, arch, func(c *Config) { c.Robots = rob; c.Access = newTableAccess(c.Now); c.AdminToken = "tok" })
	b, _ := json.Marshal(AccessRequest{Op: "check", URL: page})
	r := httptest.NewRequest(http.MethodPost, uiOrigin+accessPath, strings.NewReader(string(b)))
	r.Header.Set("Authorization", "Bearer tok")
	w := httptest.NewRecorder()
	checked.ServeHTTP(w, r)
	var rep AccessReply
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil || rep.Decision == nil || rep.Decision.Status != 403 ||
		rep.Decision.Rule == nil || !strings.Contains(rep.Decision.Rule.Reason, "robots.txt") || len(rep.Versions) != 3 || rep.Versions[0].Status != 403 {
		t.Errorf("check: %d %s", w.Code, w.Body.String())
	}

	// A look-up that fails shows the capture and is counted.
	failing := newServer(t, arch, func(c *Config) { c.Robots = &fakeRobots{err: errors.New("no ring")} })
	if w := get(t, failing, "/web/2021/"+page); w.Code != 200 {
		t.Errorf("failed look-up: %d", w.Code)
	}
	if st := failing.AccessStats(); st.RobotsErrors == 0 {
		t.Errorf("AccessStats = %+v, want robots errors", st)
	}
}
