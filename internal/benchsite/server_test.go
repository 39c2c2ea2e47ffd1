package benchsite

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// site writes a small directory tree and returns its path.
func site(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"index.html":   `<a href="a.html">a</a>`,
		"a.html":       `<img src="img/x.png">`,
		"img/x.png":    "\x89PNG\r\n\x1a\n",
		"robots.txt":   "User-agent: *\nDisallow:\n",
		"css/site.css": "body{}",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func start(t *testing.T, dir string) (*Server, *fakeClock) {
	t.Helper()
	s := New(Config{Dir: dir})
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = clk.now
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, clk
}

// get requests path with the given headers; after waits after the answer.
type step struct {
	path   string
	header map[string]string
	after  time.Duration // fake time that passes after the answer
	want   int
}

func TestRecord(t *testing.T) {
	lastMod := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	tests := []struct {
		name  string
		steps []step
		want  Record
		ok    int
	}{
		{
			name:  "nothing",
			steps: nil,
			want:  Record{},
		},
		{
			name: "crawl without repeats",
			steps: []step{
				{path: "/robots.txt", want: 200},
				{path: "/", want: 200},
				{path: "/a.html", want: 200},
				{path: "/img/x.png", want: 200},
			},
			want: Record{Paths: []string{"/", "/a.html", "/img/x.png"}, Requests: 4},
			ok:   3,
		},
		{
			name: "repeats, 404 and robots.txt twice",
			steps: []step{
				{path: "/robots.txt", want: 200},
				{path: "/robots.txt", want: 200},
				{path: "/a.html", want: 200},
				{path: "/a.html", want: 200},
				{path: "/missing.html", want: 404},
			},
			want: Record{Paths: []string{"/a.html"}, Requests: 5, Repeated: []string{"/a.html x2"}},
			ok:   1,
		},
		{
			name: "conditional request answered 304 is not a fetched path",
			steps: []step{
				{path: "/css/site.css", header: map[string]string{"If-Modified-Since": lastMod}, want: 304},
			},
			want: Record{Requests: 1},
		},
		{
			name: "idle time and stalls",
			steps: []step{
				{path: "/", after: 10 * time.Millisecond, want: 200},
				{path: "/a.html", after: StallThreshold, want: 200},
				{path: "/img/x.png", after: time.Hour, want: 200}, // after the last request: not idle time
			},
			want: Record{Paths: []string{"/", "/a.html", "/img/x.png"}, Requests: 3, Idle: StallThreshold + 10*time.Millisecond, Stalls: 1},
			ok:   3,
		},
	}
	s, clk := start(t, site(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.Reset()
			for _, st := range tt.steps {
				req, err := http.NewRequest("GET", s.URL()+st.path[1:], nil)
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range st.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != st.want {
					t.Fatalf("GET %s: %d, want %d", st.path, resp.StatusCode, st.want)
				}
				clk.advance(st.after)
			}
			got := s.Record()
			if !slices.Equal(got.Paths, tt.want.Paths) || got.Requests != tt.want.Requests ||
				!slices.Equal(got.Repeated, tt.want.Repeated) || got.Idle != tt.want.Idle || got.Stalls != tt.want.Stalls {
				t.Errorf("Record() = %+v, want %+v", got, tt.want)
			}
			if n := s.Distinct(); n != tt.ok {
				t.Errorf("Distinct() = %d, want %d", n, tt.ok)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	dir := site(t)
	tests := []struct {
		name string
		cfg  Config
		want error // nil: any error
	}{
		{"public address", Config{Dir: dir, Addr: "8.8.8.8:0"}, ErrNotLoopback},
		{"unspecified address", Config{Dir: dir, Addr: "0.0.0.0:0"}, ErrNotLoopback},
		{"host name", Config{Dir: dir, Addr: "localhost:0"}, ErrNotLoopback},
		{"no port", Config{Dir: dir, Addr: "127.0.0.1"}, nil},
		{"missing dir", Config{Dir: filepath.Join(dir, "nope")}, nil},
		{"file as dir", Config{Dir: filepath.Join(dir, "a.html")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.cfg)
			err := s.Start(context.Background())
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Start: %v, want %v", err, tt.want)
			}
			if s.URL() != "" {
				t.Errorf("URL() = %q after a failed Start", s.URL())
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	s := New(Config{Dir: site(t)})
	if err := s.Close(); err != nil {
		t.Fatalf("Close before Start: %v", err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
	u := s.URL()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if resp, err := http.Get(u); err == nil {
		resp.Body.Close()
		t.Fatal("server answers after Close")
	}
}

// TestRemote drives a server through its ControlHandler, as a benchmark in
// another process does.
func TestRemote(t *testing.T) {
	s, _ := start(t, site(t))
	ctl := httptest.NewServer(s.ControlHandler())
	defer ctl.Close()
	r := NewRemote(s.URL(), ctl.URL+"/")
	if r.URL() != s.URL() || r.ControlURL() != ctl.URL+"/" {
		t.Fatalf("URL %q, ControlURL %q; want %q, %q", r.URL(), r.ControlURL(), s.URL(), ctl.URL+"/")
	}
	for _, p := range []string{"robots.txt", "", "a.html", "a.html", "missing.html"} {
		resp, err := http.Get(s.URL() + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n, err := r.Distinct(); err != nil || n != 2 {
		t.Fatalf("Distinct = %d, %v; want 2", n, err)
	}
	rec, err := r.Record()
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Record(); !reflect.DeepEqual(rec, want) {
		t.Fatalf("remote Record %+v, want %+v", rec, want)
	}
	if rec.Requests != 5 || !slices.Equal(rec.Repeated, []string{"/a.html x2"}) {
		t.Fatalf("remote Record %+v: want 5 requests, /a.html twice", rec)
	}
	if err := r.Reset(); err != nil {
		t.Fatal(err)
	}
	if rec, err := r.Record(); err != nil || rec.Requests != 0 || len(rec.Paths) != 0 {
		t.Fatalf("Record after Reset: %+v, %v", rec, err)
	}
	ctl.Close()
	if _, err := r.Distinct(); err == nil {
		t.Fatal("Distinct with the control server gone: no error")
	}
}
