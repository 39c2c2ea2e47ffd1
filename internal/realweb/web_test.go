package realweb

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var refRE = regexp.MustCompile(`(?:href|src)="([^"]+)"|url\(([^)]+)\)`)

// TestObjectsReachable crawls a small web breadth-first with net/http and
// checks that Objects counts exactly the URLs reachable from the seeds.
func TestObjectsReachable(t *testing.T) {
	cfg := Config{Hosts: 4, Pages: 8, NoDelay: true}
	w, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	seen := map[string]bool{}
	queue := w.Seeds()
	for _, s := range queue {
		seen[s] = true
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", u, resp.Status)
		}
		base, _ := url.Parse(u)
		for _, m := range refRE.FindAllStringSubmatch(string(body), -1) {
			ref := m[1] + m[2]
			r, err := base.Parse(ref)
			if err != nil {
				t.Fatal(err)
			}
			if s := r.String(); !seen[s] {
				seen[s] = true
				queue = append(queue, s)
			}
		}
	}
	if len(seen) != cfg.Objects() {
		t.Fatalf("reached %d URLs, Objects says %d", len(seen), cfg.Objects())
	}
}

// TestDelay checks that a response waits Delay and a slow one trickles.
func TestDelay(t *testing.T) {
	w, err := Start(context.Background(), Config{Hosts: 1, Pages: 60})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	slow := ""
	for n := range 60 {
		if p := "/p/" + strconv.Itoa(n) + ".html"; Slow(0, p) {
			slow = p
			break
		}
	}
	if slow == "" {
		t.Fatal("no slow page among 60")
	}
	for _, p := range []string{"/css/site.css", slow} {
		start := time.Now()
		resp, err := http.Get(w.Seeds()[0] + p[1:])
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		want := Delay(0, p)
		if Slow(0, p) {
			want += SlowBody * 15 / 16
		}
		if took := time.Since(start); took < want {
			t.Errorf("%s took %v, want at least %v", p, took, want)
		}
		if d := Delay(0, p); d < MinDelay || d > MaxDelay {
			t.Errorf("Delay(%s) = %v outside [%v, %v]", p, d, MinDelay, MaxDelay)
		}
	}
}
