package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/archive/cdx"
)

// tableAccess is an AccessControl over an access.Table whose local
// rules live in memory.
type tableAccess struct {
	*access.Table
	mu    sync.Mutex
	rules []access.Rule
}

func newTableAccess(now func() time.Time, rules ...access.Rule) *tableAccess {
	a := &tableAccess{Table: access.NewTable(now), rules: rules}
	a.Table.Replace(access.Local, rules)
	return a
}

func (a *tableAccess) Add(_ context.Context, r access.Rule, _ bool) error {
	if err := r.Validate(); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rules = append(a.rules, r)
	a.Table.Replace(access.Local, a.rules)
	return nil
}

func (a *tableAccess) Remove(_ context.Context, id string, _ bool) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var kept []access.Rule
	for _, r := range a.rules {
		if r.ID() != id {
			kept = append(kept, r)
		}
	}
	n := len(a.rules) - len(kept)
	a.rules = kept
	a.Table.Replace(access.Local, kept)
	return n, nil
}

// hidingArchive is the listing fake whose export leaves out what
// cdx.Query.Hide names, as node/export's merge does.
type hidingArchive struct{ *listingArchive }

func (h hidingArchive) Export(ctx context.Context, q cdx.Query, w io.Writer, after string) error {
	if q.Hide == nil {
		return h.listingArchive.Export(ctx, q, w, after)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(h.listingArchive.Export(ctx, q, pw, after)) }()
	data, err := io.ReadAll(pr)
	if err != nil {
		return err
	}
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "REC "); ok {
			if u, t, err := ParseCursor(c); err == nil && q.Hide.Hidden(u, t) {
				continue
			}
		}
		if _, err := io.WriteString(w, l); err != nil {
			return err
		}
	}
	return nil
}

func at(s string) time.Time {
	t, err := time.Parse(TimestampLayout, s)
	if err != nil {
		panic(err)
	}
	return t
}

// accessRules: the 2020 capture of page blocked (451, with a reason and
// a date), https://example.com/secure excluded, other.example blocked
// with 403.
func accessRules() []access.Rule {
	return []access.Rule{
		{URL: page, Exact: true, Action: access.Block, Before: at("20210101000000"), Reason: "a privacy request", Date: at("20260102000000")},
		{URL: "https://example.com/secure", Action: access.Exclude},
		{URL: "http://other.example:8080/", Action: access.Block, Status: 403},
	}
}

// TestAccessSurfaces checks the rules on every surface: replay, id_, the
// list of dates, TimeMap, TimeGate, CDX and export.
func TestAccessSurfaces(t *testing.T) {
	arch := hidingArchive{multiHost(t)}
	plain := newServer(t, arch)
	s := newServer(t, arch, func(c *Config) { c.Access = newTableAccess(c.Now, accessRules()...) })

	// Replay and id_ of the blocked capture: 451, why and since when.
	for _, target := range []string{"/web/20200101120000/" + page, "/web/20200101120000id_/" + page, "/web/2020/" + page} {
		w := get(t, s, target)
		body := w.Body.String()
		if w.Code != http.StatusUnavailableForLegalReasons || !strings.Contains(body, "a privacy request") || !strings.Contains(body, "since 2 Jan 2026") {
			t.Errorf("%s: %d %.300q", target, w.Code, body)
		}
		if strings.Contains(body, "first") {
			t.Errorf("%s: the blocked capture's body was served", target)
		}
	}
	// The UI origin frames the content origin's answer.
	if w := getUI(t, s, "/web/20200101120000/"+page); w.Code != 200 || strings.Contains(w.Body.String(), "<title>v1") {
		t.Errorf("framed replay of the blocked capture: %d", w.Code)
	}
	if w := get(t, s, "/web/2021/"+page); w.Code != 200 || !strings.Contains(w.Body.String(), "second") {
		t.Errorf("allowed capture: %d", w.Code)
	}
	if w := get(t, s, "/web/2021/http://other.example:8080/"); w.Code != http.StatusForbidden {
		t.Errorf("403 rule: %d", w.Code)
	}
	// Excluded: as if never archived.
	for _, target := range []string{"/web/2023/https://example.com/secure", "/web/2023id_/https://example.com/secure",
		"/web/*/https://example.com/secure", "/timemap/link/https://example.com/secure"} {
		if w := get(t, s, target); w.Code != 404 || strings.Contains(w.Body.String(), "s1") {
			t.Errorf("%s: %d, want 404", target, w.Code)
		}
		if w := get(t, plain, target); w.Code == 404 {
			t.Errorf("%s without rules: 404", target)
		}
	}
	// Blocked captures stay listed: dates, TimeMap, TimeGate.
	if w := get(t, s, "/web/*/"+page); w.Code != 200 || !strings.Contains(w.Body.String(), "20200101120000") {
		t.Errorf("list of dates lost the blocked capture: %d", w.Code)
	}
	if w := get(t, s, "/timemap/link/"+page); strings.Count(w.Body.String(), "datetime=") != 3 {
		t.Errorf("timemap:\n%s", w.Body.String())
	}
	if w := get(t, s, "/timegate/"+page, "Accept-Datetime", "Mon, 01 Jan 1990 00:00:00 GMT"); w.Code != 302 ||
		w.Header().Get("Location") != "/web/20200101120000/"+page {
		t.Errorf("timegate: %d %q", w.Code, w.Header().Get("Location"))
	}
	// CDX: the excluded capture is not listed, the blocked ones are.
	_, all := cdxLines(t, plain, "url=example.com&matchType=domain")
	_, ruled := cdxLines(t, s, "url=example.com&matchType=domain")
	if len(ruled) != len(all)-1 || strings.Contains(strings.Join(ruled, "\n"), "/secure") {
		t.Errorf("cdx: %d rows with rules, %d without:\n%s", len(ruled), len(all), strings.Join(ruled, "\n"))
	}
	// Export: neither the blocked nor the excluded captures leave.
	_, everything, _ := exportRequest(t, plain, "prefix=http://example.com/")
	code, exported, _ := exportRequest(t, s, "prefix=http://example.com/")
	got := strings.Join(exported, "\n")
	if code != 200 || len(everything) < 5 || len(exported) != len(everything)-1 || strings.Contains(got, "20200101120000") {
		t.Errorf("export: %d, %d records of %d:\n%s", code, len(exported), len(everything), got)
	}
	_, secure, _ := exportRequest(t, plain, "url=https://example.com/secure")
	_, exported, _ = exportRequest(t, s, "url=https://example.com/secure")
	if len(secure) != 1 || len(exported) != 0 {
		t.Errorf("export of an excluded URL: %q (without rules %q)", exported, secure)
	}
	if st := s.AccessStats(); st.Blocked < 4 || st.Hidden == 0 {
		t.Errorf("AccessStats = %+v", st)
	}
}

// TestAccessPick: when the capture the archive picks is excluded, the
// reader gets the nearest listed one, never the excluded one.
func TestAccessPick(t *testing.T) {
	s := newServer(t, sampleArchive(t), func(c *Config) {
		c.Access = newTableAccess(c.Now, access.Rule{URL: page, Exact: true, Action: access.Exclude, After: at("20220101000000")})
	})
	w := get(t, s, "/web/2023/"+page)
	if w.Code != 200 || w.Header().Get("Memento-Datetime") != "Tue, 15 Jun 2021 00:00:00 GMT" {
		t.Errorf("%d %q", w.Code, w.Header().Get("Memento-Datetime"))
	}
	if w := get(t, s, "/web/"+page); w.Code != 302 || !strings.Contains(w.Header().Get("Location"), "20210615000000") {
		t.Errorf("latest: %d %q", w.Code, w.Header().Get("Location"))
	}
}

// TestAccessAdmin drives /api/access as herod access does.
func TestAccessAdmin(t *testing.T) {
	acc := newTableAccess(nil)
	s := newServer(t, sampleArchive(t), func(c *Config) { c.Access = acc; c.AdminToken = "tok" })
	call := func(tok string, req AccessRequest) (int, AccessReply) {
		b, _ := json.Marshal(req)
		r := httptest.NewRequest(http.MethodPost, uiOrigin+accessPath, strings.NewReader(string(b)))
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var rep AccessReply
		if w.Code == 200 {
			if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
		}
		return w.Code, rep
	}
	if code, _ := call("", AccessRequest{Op: "list"}); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := call("tok", AccessRequest{Op: "add", Rule: &access.Rule{URL: page, Action: "hide"}}); code != 400 {
		t.Errorf("bad rule: %d", code)
	}
	code, rep := call("tok", AccessRequest{Op: "add", Rule: &access.Rule{URL: page, Action: access.Block, Reason: "legal notice"}})
	if code != 200 || rep.ID == "" {
		t.Fatalf("add: %d %+v", code, rep)
	}
	if w := get(t, s, "/web/2021/"+page); w.Code != 451 {
		t.Errorf("after add: %d", w.Code)
	}
	_, list := call("tok", AccessRequest{Op: "list"})
	if len(list.Rules) != 1 || list.Rules[0].ID != rep.ID || list.Rules[0].Rule.Date.IsZero() {
		t.Errorf("list: %+v", list)
	}
	_, chk := call("tok", AccessRequest{Op: "check", URL: page})
	if chk.Decision == nil || chk.Decision.Status != 451 || len(chk.Versions) != 3 || chk.SURT != "com,example)/" {
		t.Errorf("check: %+v", chk)
	}
	if code, _ := call("tok", AccessRequest{Op: "remove"}); code != 400 {
		t.Errorf("remove without an id: %d", code)
	}
	if _, rm := call("tok", AccessRequest{Op: "remove", ID: rep.ID}); rm.Removed != 1 {
		t.Errorf("remove: %+v", rm)
	}
	if w := get(t, s, "/web/2021/"+page); w.Code != 200 {
		t.Errorf("after remove: %d", w.Code)
	}
}
