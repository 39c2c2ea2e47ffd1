package render

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	long := strings.Repeat("Words a reader reads. ", 80) // 1,760 bytes
	for _, tc := range []struct {
		name, html string
		heavy      bool
	}{
		{"shell", `<html><head><script src=/app.js></script></head><body><div id=app>Loading…</div></body></html>`, true},
		{"article", `<html><head><script src=/analytics.js></script></head><body><p>` + long + `</p></body></html>`, false},
		{"no script", `<html><body><p>short</p></body></html>`, false},
		{"json data only", `<html><body><p>short</p><script type="application/json">{"a":1}</script></body></html>`, false},
		{"text under inline script", `<html><body><p>` + long + `</p><script>` + strings.Repeat("x=1;", 1000) + `</script></body></html>`, true},
		{"module", `<html><body><noscript>` + long + `</noscript><script type=module src=/m.js></script></body></html>`, true},
		{"style and title hidden", `<html><head><title>` + long + `</title><style>` + long + `</style></head><body><script src=/a.js></script></body></html>`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Measure([]byte(tc.html))
			if w.ScriptHeavy() != tc.heavy {
				t.Errorf("%+v: ScriptHeavy %v, want %v", w, !tc.heavy, tc.heavy)
			}
		})
	}
	if w := Measure([]byte("<p>a  \n b</p>")); w.Text != 3 {
		t.Errorf("whitespace runs: text %d, want 3", w.Text)
	}
}

func TestRules(t *testing.T) {
	r, err := ParseRules([]byte("# sites that need a browser\ncom,example)/app/\n\nhttps://www.Shop.example.org/cart\n"))
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"https://example.com/app/x":          true,
		"http://www.example.com/app/":        true,
		"https://example.com/about":          false,
		"https://shop.example.org/cart?id=3": true,
		"https://shop.example.org/":          false,
		"https://example.net/app/":           false,
	} {
		if got := r.Match(u); got != want {
			t.Errorf("Match(%s) = %v, want %v", u, got, want)
		}
	}
	if _, err := ParseRules([]byte("com,example)/\nnot a rule\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
	var none *Rules
	if none.Match("https://example.com/") {
		t.Error("nil rules match")
	}
}

func TestVerdicts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	v, err := OpenVerdicts(path)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Probe("a.example") || v.Probe("a.example") {
		t.Fatal("a second probe of a host while one is under way")
	}
	v.Abandon("a.example")
	if !v.Probe("a.example") {
		t.Fatal("no probe after an abandoned one")
	}
	if err := v.Learn("a.example", true); err != nil {
		t.Fatal(err)
	}
	if err := v.Learn("b.example", false); err != nil {
		t.Fatal(err)
	}
	if v.Probe("a.example") {
		t.Fatal("a probe of a host with a verdict")
	}
	// A line cut by a crash is skipped.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("c.exam")
	f.Close()
	w, err := OpenVerdicts(path)
	if err != nil {
		t.Fatal(err)
	}
	if need, known := w.Need("a.example"); !need || !known {
		t.Errorf("a.example: %v %v after reopening", need, known)
	}
	if need, known := w.Need("b.example"); need || !known {
		t.Errorf("b.example: %v %v after reopening", need, known)
	}
	if w.Len() != 2 {
		t.Errorf("%d verdicts, want 2", w.Len())
	}
}

func TestChooser(t *testing.T) {
	rules, _ := ParseRules([]byte("com,example,rules)/\n"))
	v, _ := OpenVerdicts("")
	c := &Chooser{Rules: rules, Verdicts: v}
	html := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	shell := []byte(`<body><div id=app></div><script src=/a.js></script></body>`)
	article := []byte(`<body><p>` + strings.Repeat("text ", 400) + `</p><script src=/a.js></script></body>`)
	steps := []struct {
		url  string
		h    http.Header
		body []byte
		want Reason
	}{
		{"https://rules.example.com/a", html, article, ReasonRule},
		{"https://docs.example/a", http.Header{"Content-Type": {"application/json"}}, shell, ""},
		{"https://docs.example/a", html, article, ReasonFirst},
		{"https://docs.example/b", html, article, ""}, // probe under way
		{"https://docs.example/c", html, shell, ReasonScript},
	}
	for _, s := range steps {
		if got := c.Choose(s.url, s.h, s.body); got != s.want {
			t.Errorf("Choose(%s) = %q, want %q", s.url, got, s.want)
		}
	}
	if need, err := c.Learned("https://docs.example/a", []string{"https://docs.example/b"}, []string{"https://docs.example/b"},
		[]string{"https://docs.example/api.json"}); err != nil || !need {
		t.Errorf("Learned: %v, %v; want a browser needed", need, err)
	}
	if got := c.Choose("https://docs.example/d", html, article); got != ReasonHost {
		t.Errorf("after the verdict: %q, want %q", got, ReasonHost)
	}
}

func TestNeeds(t *testing.T) {
	page := "https://a.example/"
	plain := []string{"https://a.example/1", "https://a.example/s.css", "https://a.example/data.json"}
	for _, tc := range []struct {
		name              string
		rendered, fetched []string
		need              bool
	}{
		{"nothing new", []string{"https://a.example/1"}, []string{"https://a.example/data.json"}, false},
		{"a link only a script wrote", []string{"https://a.example/1", "https://a.example/hidden"}, nil, true},
		{"content fetched by script", nil, []string{"https://a.example/api/page.json"}, true},
		{"same URL, other form", []string{"HTTPS://A.example:443/1"}, nil, false},
	} {
		if got := Needs(page, plain, tc.rendered, tc.fetched); got != tc.need {
			t.Errorf("%s: Needs %v, want %v", tc.name, got, tc.need)
		}
	}
}

func TestPacer(t *testing.T) {
	now := time.Unix(0, 0)
	p := NewPacer(0.5, 2, func() time.Time { return now }) // 1 CPU second a second, 30 in the bucket
	if p.Wait() != 0 {
		t.Fatal("a full bucket waits")
	}
	p.Charge(40 * time.Second)
	if got := p.Wait(); got != 10*time.Second {
		t.Fatalf("10 CPU seconds over: wait %v, want 10s", got)
	}
	now = now.Add(10*time.Second + time.Millisecond)
	if p.Wait() != 0 {
		t.Fatal("still waiting after the debt is paid")
	}
	now = now.Add(time.Hour)
	p.Charge(30 * time.Second)
	if got := p.Wait(); got != 0 {
		t.Fatalf("the burst is capped at 30 s: wait %v", got)
	}
	p.Charge(time.Second)
	if got := p.Wait(); got != time.Second {
		t.Fatalf("past the burst: wait %v, want 1s", got)
	}
}
