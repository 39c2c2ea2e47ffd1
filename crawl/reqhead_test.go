package crawl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// seenRequest is the server's view of a request it received.
type seenRequest struct {
	method, uri, host string
	header            http.Header
}

// TestRequestHeadRecorded checks that every stored capture carries the
// head of the request its answer came to, as the server received it:
// the first day's plain GET, and the second day's conditional GET (with
// If-None-Match and If-Modified-Since) of a page that changed, for a
// page, a redirect and an error answer.
func TestRequestHeadRecorded(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]seenRequest{}
	body := map[string]string{"/": `<a href="/gone">g</a><a href="/moved">m</a>`}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], seenRequest{r.Method, r.RequestURI, r.Host, r.Header.Clone()})
		b := body[r.URL.Path]
		mu.Unlock()
		switch r.URL.Path {
		case "/":
			w.Header().Set("ETag", fmt.Sprintf(`"%d"`, len(b)))
			w.Header().Set("Last-Modified", "Mon, 02 Jan 2026 03:04:05 GMT")
			w.Header().Set("Content-Type", "text/html")
			if r.Header.Get("If-None-Match") == fmt.Sprintf(`"%d"`, len(b)) {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			io.WriteString(w, b)
		case "/moved":
			http.Redirect(w, r, "/", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	a := newMemArchive()
	clock := newClock()
	cfg := testConfig(clock)
	cfg.From = "ops@example.org"
	c, _ := startCrawler(t, t.TempDir(), cfg, a)
	ctx := context.Background()
	if err := c.Add(ctx, []string{srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	mu.Lock()
	body["/"] = `<a href="/gone">gone</a>`
	mu.Unlock()
	clock.Add(24 * time.Hour)
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)

	check := func(u, path string, i int, c archive.Capture) {
		t.Helper()
		mu.Lock()
		rs := seen[path]
		mu.Unlock()
		if i >= len(rs) {
			t.Fatalf("%s: %d requests seen, want over %d", u, len(rs), i)
		}
		want := rs[i]
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(c.Request)))
		if err != nil {
			t.Fatalf("%s: stored head %q: %v", u, c.Request, err)
		}
		if !bytes.HasPrefix(c.Request, []byte("GET "+want.uri+" HTTP/1.1\r\nHost: "+want.host+"\r\n")) {
			t.Fatalf("%s: stored head %q does not start with the request line and Host", u, c.Request)
		}
		if req.Method != want.method || req.RequestURI != want.uri || req.Host != want.host || !reflect.DeepEqual(req.Header, want.header) {
			t.Fatalf("%s: stored head %q\nserver saw %+v", u, c.Request, want)
		}
		if req.Header.Get("User-Agent") != DefaultUserAgent || req.Header.Get("From") != "ops@example.org" {
			t.Fatalf("%s: identity missing from %q", u, c.Request)
		}
	}
	root := a.versions[srv.URL+"/"]
	if len(root) != 2 {
		t.Fatalf("%d versions of /, want 2", len(root))
	}
	check("/ day 1", "/", 0, root[0])
	check("/ day 2", "/", 1, root[1])
	if h := string(root[1].Request); !strings.Contains(h, "\r\nIf-None-Match: ") || !strings.Contains(h, "\r\nIf-Modified-Since: ") {
		t.Fatalf("day 2 head not conditional: %q", h)
	}
	if strings.Contains(string(root[0].Request), "If-None-Match") {
		t.Fatalf("day 1 head conditional: %q", root[0].Request)
	}
	for _, p := range []string{"/moved", "/gone"} {
		vs := a.versions[srv.URL+p]
		if len(vs) == 0 {
			t.Fatalf("%s not stored; stored %v", p, a.urls())
		}
		check(p, p, 0, vs[0])
	}
}

// TestRequestHeadNone checks that a head the transport did not finish
// writing, or one over archive.MaxRequestHead, is not kept.
func TestRequestHeadNone(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://example.org/a?b", nil)
	var r headRecorder
	r.field("Host", []string{"example.org"})
	if h := r.head(req, "HTTP/1.1"); h != nil {
		t.Fatalf("unfinished head kept: %q", h)
	}
	r.field("X-Long", []string{strings.Repeat("x", archive.MaxRequestHead)})
	r.done = true
	if h := r.head(req, "HTTP/1.1"); h != nil {
		t.Fatalf("oversized head kept (%d bytes)", len(h))
	}
	var h2 headRecorder
	for _, f := range [][2]string{{":authority", "example.org"}, {":method", "GET"}, {":path", "/a?b"}, {":scheme", "https"}, {"user-agent", "ua"}} {
		h2.field(f[0], []string{f[1]})
	}
	h2.done = true
	if got, want := string(h2.head(req, "HTTP/2.0")), "GET /a?b HTTP/2.0\r\nhost: example.org\r\nuser-agent: ua\r\n\r\n"; got != want {
		t.Fatalf("HTTP/2 head %q, want %q", got, want)
	}
}

// BenchmarkRequestHead measures a loopback fetch of an 11 kB page with
// and without the request head's recording, and the recording alone (a
// conditional GET's six fields and the head); run with
// go test -run '^$' -bench RequestHead -benchmem -count 5 ./crawl/.
func BenchmarkRequestHead(b *testing.B) {
	b.Run("recorder-only", func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/p?q=1", nil)
		fields := [][2]string{{"Host", "127.0.0.1:8080"}, {"User-Agent", DefaultUserAgent}, {"From", "ops@example.org"},
			{"If-Modified-Since", "Mon, 02 Jan 2026 03:04:05 GMT"}, {"If-None-Match", `"0123456789abcdef"`}, {"Accept-Encoding", "gzip"}}
		for i := 0; i < b.N; i++ {
			var hr headRecorder
			for _, f := range fields {
				hr.field(f[0], []string{f[1]})
			}
			hr.done = true
			if hr.head(req, "HTTP/1.1") == nil {
				b.Fatal("no head")
			}
		}
	})
	page := strings.Repeat("<p>text</p>", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		io.WriteString(w, page)
	}))
	defer srv.Close()
	client := srv.Client()
	for _, rec := range []bool{false, true} {
		b.Run(fmt.Sprintf("record=%v", rec), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ctx := context.Background()
				var hr headRecorder
				if rec {
					ctx = hr.trace(ctx)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/p?q=1", nil)
				setIdentity(req, DefaultUserAgent, "ops@example.org")
				req.Header.Set("If-None-Match", `"old"`)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if rec && hr.head(req, resp.Proto) == nil {
					b.Fatal("no head")
				}
			}
		})
	}
}

// TestRequestHeadStore checks that the head reaches the real archive and
// reads back: the stored version's head is the one the server received.
func TestRequestHeadStore(t *testing.T) {
	var mu sync.Mutex
	var got seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/p" {
			mu.Lock()
			got = seenRequest{r.Method, r.RequestURI, r.Host, r.Header.Clone()}
			mu.Unlock()
		}
		io.WriteString(w, "<p>page</p>")
	}))
	defer srv.Close()
	a := storeKind.open(t)
	c, _ := startCrawler(t, t.TempDir(), testConfig(newClock()), a)
	ctx := context.Background()
	if err := c.Add(ctx, []string{srv.URL + "/p"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	_, ac, err := a.(*archive.Store).Get(ctx, srv.URL+"/p", time.Now().Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(ac.Request)))
	mu.Lock()
	defer mu.Unlock()
	if err != nil || req.RequestURI != got.uri || req.Host != got.host || !reflect.DeepEqual(req.Header, got.header) {
		t.Fatalf("stored head %q (%v), server saw %+v", ac.Request, err, got)
	}
}
