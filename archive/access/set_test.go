package access

import (
	"fmt"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func day(s string) time.Time {
	t, err := time.Parse("20060102", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSURT(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://www.Example.com:8080/A?b=1", "com,example:8080)/a?b=1"},
		{"https://example.com/", "com,example)/"},
		{"http://example.com", "com,example)/"},
		{"httpbin.org/", "org,httpbin)/"},
		{"http://httpbin.org/anything/something", "org,httpbin)/anything/something"},
		{"http://a.b.example.co.uk/x#frag", "uk,co,example,b,a)/x"},
		{"http://127.0.0.1:8000/p", "1,0,0,127:8000)/p"},
		{"http://example.com?q", "com,example)/?q"},
		{"http://www2.example.com/?b=2&a=1", "com,example)/?a=1&b=2"},
	} {
		got, err := SURT(c.in)
		if err != nil || got != c.want {
			t.Errorf("SURT(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	// The fast path keys canonical URLs as the CDX API does.
	for _, u := range []string{"http://example.com/", "https://www.example.com/a/B?z=1&y=2", "http://wwwx.example.com/",
		"http://[::1]:8080/p", "http://xn--bcher-kva.example/", "http://example.com:8080/%7Efoo", "http://127.0.0.1/"} {
		c, err := canon.Canonical(u)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := SURT(c); got != archive.Surt(c) {
			t.Errorf("SURT(%q) = %q, archive.Surt %q", c, got, archive.Surt(c))
		}
	}
	for _, bad := range []string{"ftp://example.com/", "http://", "mailto:x@y"} {
		if k, err := SURT(bad); err == nil {
			t.Errorf("SURT(%q) = %q, want an error", bad, k)
		}
	}
}

// TestPrecedencePywb runs the examples of pywb's access control manual
// (docs/manual/access-control.rst: the .aclj example, exact match,
// user-less restricted prefix, before/after dates, the newer-than
// embargo) and herod's own precedence cases against Set.Decide.
func TestPrecedencePywb(t *testing.T) {
	now := day("20260601")
	aclj := []Rule{ // the manual's .aclj file
		{SURT: "org,httpbin)/anything/something", Action: Allow},
		{SURT: "org,httpbin)/anything", Action: Exclude},
		{SURT: "org,httpbin)/", Action: Block},
		{SURT: "com,", Action: Allow},
	}
	exactAllow := []Rule{ // wb-manager acl add ... allow --exact-match, under the exclude
		{URL: "http://httpbin.org/anything/something", Exact: true, Action: Allow},
		{SURT: "org,httpbin)/anything", Action: Exclude},
	}
	cases := []struct {
		name  string
		rules []Rule
		url   string
		t     time.Time
		want  Action
	}{
		{"aclj allow inside exclude", aclj, "http://httpbin.org/anything/something", now, Allow},
		{"aclj allow prefix covers subpaths", aclj, "http://httpbin.org/anything/something/subpath", now, Allow},
		{"aclj block at host root", aclj, "http://httpbin.org/", now, Block},
		{"aclj block covers other paths", aclj, "http://httpbin.org/get", now, Block},
		{"aclj exclude", aclj, "http://httpbin.org/anything", now, Exclude},
		{"aclj exclude covers siblings by string prefix", aclj, "http://httpbin.org/anythingelse", now, Exclude},
		{"aclj com, allows", aclj, "http://example.com/", now, Allow},
		{"aclj no rule", aclj, "http://example.org/", now, Allow},
		{"exact allow", exactAllow, "http://httpbin.org/anything/something", now, Allow},
		{"exact allow not a prefix", exactAllow, "http://httpbin.org/anything/something/subpath", now, Exclude},
		{"exact beats longer prefix", []Rule{
			{URL: "http://example.com/a", Exact: true, Action: Allow},
			{SURT: "com,example)/a", Action: Block},
		}, "http://example.com/a", now, Allow},
		{"restricted prefix", []Rule{{SURT: "com,example)/restricted", Action: Block}}, "https://example.com/restricted/page", now, Block},
		{"before blocks older", []Rule{{SURT: "com,", Action: Block, Before: day("20201226")}}, "http://example.com/", day("20201225"), Block},
		{"before spares the date itself", []Rule{{SURT: "com,", Action: Block, Before: day("20201226")}}, "http://example.com/", day("20201226"), Allow},
		{"after blocks on the date", []Rule{{SURT: "com,", Action: Block, After: day("20201226")}}, "http://example.com/", day("20201226"), Block},
		{"after spares older", []Rule{{SURT: "com,", Action: Block, After: day("20201226")}}, "http://example.com/", day("20201225"), Allow},
		{"embargo newer than 1y", []Rule{{SURT: "*", Action: Block, Embargo: Period(365 * 24 * time.Hour)}}, "http://example.com/", now.AddDate(0, -6, 0), Block},
		{"embargo spares older", []Rule{{SURT: "*", Action: Block, Embargo: Period(365 * 24 * time.Hour)}}, "http://example.com/", now.AddDate(-2, 0, 0), Allow},
		{"allow inside an embargo", []Rule{
			{SURT: "*", Action: Block, Embargo: Period(365 * 24 * time.Hour)},
			{SURT: "com,example)/open", Action: Allow},
		}, "http://example.com/open/x", now.AddDate(0, -1, 0), Allow},
		{"dated rule beats undated on one key", []Rule{
			{SURT: "com,example)/", Action: Allow},
			{SURT: "com,example)/", Action: Block, Before: day("20200101")},
		}, "http://example.com/x", day("20190101"), Block},
		{"dated rule out of window falls to undated", []Rule{
			{SURT: "com,example)/", Action: Allow},
			{SURT: "com,example)/", Action: Exclude, Before: day("20200101")},
		}, "http://example.com/x", day("20210101"), Allow},
		{"out of window falls to shorter prefix", []Rule{
			{SURT: "com,example)/a", Action: Allow, Before: day("20200101")},
			{SURT: "com,example)/", Action: Exclude},
		}, "http://example.com/a/b", day("20210101"), Exclude},
		{"tie: more restrictive wins", []Rule{
			{SURT: "com,example)/", Action: Allow},
			{SURT: "com,example)/", Action: Block},
		}, "http://example.com/", now, Block},
		{"purge beats exclude on one key", []Rule{
			{SURT: "com,example)/", Action: Exclude},
			{SURT: "com,example)/", Action: Purge},
		}, "http://example.com/", now, Purge},
		{"scheme and www do not matter", []Rule{{URL: "https://www.example.com/p", Exact: true, Action: Exclude}}, "http://example.com/p", now, Exclude},
		{"case does not matter", []Rule{{URL: "http://example.com/Private", Action: Block}}, "http://example.com/private/x", now, Block},
		{"sibling key not a prefix", []Rule{
			{SURT: "com,example)/ab", Action: Block},
			{SURT: "com,example)/a", Action: Exclude},
		}, "http://example.com/ac", now, Exclude},
	}
	for _, c := range cases {
		s, bad := NewSet(c.rules)
		if bad != nil {
			t.Fatalf("%s: bad rules %v", c.name, bad)
		}
		if got := s.Decide(c.url, c.t, now).Action; got != c.want {
			t.Errorf("%s: Decide(%s, %s) = %s, want %s", c.name, c.url, c.t.Format("20060102"), got, c.want)
		}
	}
}

func TestDecision(t *testing.T) {
	s, _ := NewSet([]Rule{
		{SURT: "com,a)/", Action: Block, Reason: "privacy request", Date: day("20260101")},
		{SURT: "com,b)/", Action: Block, Status: 403},
		{SURT: "com,c)/", Action: Exclude},
	})
	now := day("20260601")
	for _, c := range []struct {
		url           string
		status        int
		shown, listed bool
	}{
		{"http://a.com/", 451, false, true},
		{"http://b.com/", 403, false, true},
		{"http://c.com/", 404, false, false},
		{"http://d.com/", 200, true, true},
	} {
		d := s.Decide(c.url, now, now)
		if d.Status() != c.status || d.Shown() != c.shown || d.Listed() != c.listed {
			t.Errorf("%s: status %d shown %t listed %t", c.url, d.Status(), d.Shown(), d.Listed())
		}
	}
	if d := s.Decide("http://a.com/x", now, now); d.Rule == nil || d.Rule.Reason != "privacy request" {
		t.Errorf("decision does not carry its rule: %+v", d)
	}
}

func TestValidate(t *testing.T) {
	for _, r := range []Rule{
		{Action: Block},
		{URL: "http://a.com/", SURT: "com,a)/", Action: Block},
		{SURT: "com,a)/", Exact: true, Action: Block},
		{URL: "http://a.com/", Action: "hide"},
		{URL: "http://a.com/", Action: Allow, Status: 451},
		{URL: "http://a.com/", Action: Block, Status: 404},
		{URL: "http://a.com/", Action: Block, After: day("20200101"), Before: day("20190101")},
		{URL: "ftp://a.com/", Action: Block},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v validated", r)
		}
	}
	if _, bad := NewSet([]Rule{{Action: Block}, {SURT: "com,", Action: Block}}); len(bad) != 1 || bad[0] == nil {
		t.Errorf("NewSet bad = %v, want the first rule", bad)
	}
}

func TestParsePeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1y": 365 * 24 * time.Hour, "36h": 36 * time.Hour} {
		if got, err := ParsePeriod(in); err != nil || time.Duration(got) != want {
			t.Errorf("ParsePeriod(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"-1d", "xd", "1q"} {
		if _, err := ParsePeriod(in); err == nil {
			t.Errorf("ParsePeriod(%q) accepted", in)
		}
	}
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules")
	tab := NewTable(nil)
	f, err := OpenFile(path, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(Rule{URL: "http://a.com/", Action: Block, Reason: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(Rule{URL: "http://a.com/", Action: Exclude, Reason: "r2"}); err != nil { // same ID: replaces
		t.Fatal(err)
	}
	if got := tab.List(); len(got) != 1 || got[0].Action != Exclude || got[0].Source != Local {
		t.Fatalf("after two adds of one ID: %+v", got)
	}
	if d := tab.Decide("http://a.com/x", time.Now()); d.Action != Exclude {
		t.Fatalf("decide %s", d.Action)
	}
	// An edit on disk is picked up by Reload; a bad one leaves the rules.
	gen := tab.Generation()
	if err := os.WriteFile(path, []byte("# c\n{\"surt\":\"com,b)/\",\"action\":\"block\",\"embargo\":\"30d\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	if err := f.Reload(); err != nil || tab.Generation() == gen {
		t.Fatalf("reload: %v, generation %d", err, tab.Generation())
	}
	if tab.Decide("http://a.com/x", time.Now()).Action != Allow || tab.Decide("http://b.com/", time.Now()).Action != Block {
		t.Fatal("reloaded rules not in force")
	}
	os.WriteFile(path, []byte("{\"surt\":\"com,b)/\",\"action\":\"hide\"}\n"), 0o644)
	os.Chtimes(path, time.Now().Add(2*time.Hour), time.Now().Add(2*time.Hour))
	if err := f.Reload(); err == nil {
		t.Fatal("a bad file reloaded")
	}
	if tab.Decide("http://b.com/", time.Now()).Action != Block {
		t.Fatal("a bad file dropped the rules in force")
	}
	os.WriteFile(path, []byte("{\"surt\":\"com,b)/\",\"action\":\"block\"}\n{\"url\":\"http://c.com/\",\"action\":\"exclude\"}\n"), 0o644)
	os.Chtimes(path, time.Now().Add(3*time.Hour), time.Now().Add(3*time.Hour))
	if n, err := f.Remove("http://c.com/"); err != nil || n != 1 {
		t.Fatalf("remove by URL: %d, %v", n, err)
	}
	id := f.Rules()[0].ID()
	if n, err := f.Remove(id); err != nil || n != 1 || len(tab.List()) != 0 {
		t.Fatalf("remove by id: %d, %v, %d left", n, err, len(tab.List()))
	}
	// Reopened, the file holds what was written.
	f.Add(Rule{SURT: "com,d)/", Action: Block, Status: 403})
	tab2 := NewTable(nil)
	if _, err := OpenFile(path, tab2, nil); err != nil || tab2.Set().Len() != 1 {
		t.Fatalf("reopen: %v, %d rules", err, tab2.Set().Len())
	}
}

// rulesN returns n prefix rules over distinct hosts and paths, a tenth of
// them exact.
func rulesN(n int) []Rule {
	rs := make([]Rule, n)
	for i := range rs {
		rs[i] = Rule{URL: fmt.Sprintf("http://host%d.example.com/path%d/", i%997, i), Action: Block}
		if i%10 == 0 {
			rs[i].Exact = true
		}
	}
	return rs
}

func TestDecideMany(t *testing.T) {
	s, bad := NewSet(rulesN(10000))
	if bad != nil || s.Len() != 10000 {
		t.Fatalf("%d rules, bad %v", s.Len(), bad)
	}
	now := time.Now()
	// Every rule's own URL (and a URL under each prefix) is decided by it.
	for i := 0; i < 10000; i += 37 {
		u := fmt.Sprintf("http://host%d.example.com/path%d/", i%997, i)
		if s.Decide(u, now, now).Action != Block {
			t.Fatalf("%s not blocked", u)
		}
		if d := s.Decide(u+"sub", now, now); (d.Action == Block) == (i%10 == 0) {
			t.Fatalf("%ssub: %s (exact %t)", u, d.Action, i%10 == 0)
		}
	}
	if s.Decide("http://host1.example.com/other", now, now).Action != Allow {
		t.Fatal("unruled URL not allowed")
	}
}
