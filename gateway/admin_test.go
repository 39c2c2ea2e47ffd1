package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/ringview"
)

func TestAdminToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := ReadAdminToken(dir); !errors.Is(err, ErrNoToken) {
		t.Fatalf("ReadAdminToken of an empty dir: %v, want ErrNoToken", err)
	}
	tok, err := LoadAdminToken(dir)
	if err != nil || len(tok) != 64 {
		t.Fatalf("LoadAdminToken = %q, %v", tok, err)
	}
	path := filepath.Join(dir, AdminTokenFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 0600", fi.Mode(), err)
	}
	again, err := LoadAdminToken(dir)
	if err != nil || again != tok {
		t.Errorf("second LoadAdminToken = %q, %v; want the same token", again, err)
	}
	if read, err := ReadAdminToken(dir); err != nil || read != tok {
		t.Errorf("ReadAdminToken = %q, %v", read, err)
	}
	// A token file others may read is made private again.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAdminToken(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file left at %v", fi.Mode())
	}
}

// TestSeedNeedsToken checks POST /api/seed: only with the admin token, never
// from a page (another origin, the content origin, another site), never as
// a simple cross-site request, and only with POST.
func TestSeedNeedsToken(t *testing.T) {
	const token = "s3cret"
	var got [][]string
	s := newServer(t, newFake(), func(c *Config) {
		c.AdminToken = token
		c.Seed = func(_ context.Context, urls []string) ([]SeedResult, error) {
			got = append(got, urls)
			return nil, nil
		}
	})
	seed := func(method string, hdr ...string) int {
		r := httptest.NewRequest(method, uiOrigin+"/api/seed", strings.NewReader("http://a.example/\n\n http://b.example/ \n"))
		r.RemoteAddr = "127.0.0.1:5555"
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name   string
		method string
		hdr    []string
		want   int
	}{
		{"no token (loopback, text/plain: what any page could send)", http.MethodPost, []string{"Content-Type", "text/plain"}, http.StatusUnauthorized},
		{"wrong token", http.MethodPost, []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"token, from another site", http.MethodPost, []string{"Authorization", bearer, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"token, from the content origin", http.MethodPost, []string{"Authorization", bearer, "Sec-Fetch-Site", "same-site", "Origin", contentOrigin}, http.StatusForbidden},
		{"token, Origin of another site", http.MethodPost, []string{"Authorization", bearer, "Origin", "http://evil.example"}, http.StatusForbidden},
		{"GET", http.MethodGet, []string{"Authorization", bearer}, http.StatusMethodNotAllowed},
		{"token (herod seed)", http.MethodPost, []string{"Authorization", bearer, "Content-Type", "text/plain"}, http.StatusAccepted},
		{"token, from the UI itself", http.MethodPost, []string{"Authorization", bearer, "Sec-Fetch-Site", "same-origin", "Origin", uiOrigin}, http.StatusAccepted},
	} {
		if code := seed(tc.method, tc.hdr...); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	if len(got) != 2 || !slices.Equal(got[0], []string{"http://a.example/", "http://b.example/"}) {
		t.Errorf("seeded %q, want the two accepted requests' URLs", got)
	}
	if st := s.Stats(); st.Refused != 5 {
		t.Errorf("Stats.Refused = %d, want 5", st.Refused)
	}
	// The content origin has no admin endpoint at all.
	r := httptest.NewRequest(http.MethodPost, contentOrigin+"/api/seed", strings.NewReader("http://c.example/"))
	r.Header.Set("Authorization", bearer)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed || len(got) != 2 {
		t.Errorf("seed on the content origin: %d", w.Code)
	}
	// Without a token configured the endpoint is absent.
	off := newServer(t, newFake(), func(c *Config) { c.Seed = func(context.Context, []string) ([]SeedResult, error) { return nil, nil } })
	w = httptest.NewRecorder()
	off.ServeHTTP(w, httptest.NewRequest(http.MethodPost, uiOrigin+"/api/seed", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("seed without a token configured: %d, want 404", w.Code)
	}
}

// TestPrivateStatus checks who may read /api/status, /ring and /metrics by
// default, and that PublicStatus opens them.
func TestPrivateStatus(t *testing.T) {
	mod := func(c *Config) {
		c.AdminToken = "tok"
		c.Status = func(context.Context) any { return map[string]string{"secret": "STATUS"} }
		c.Ring = func(context.Context) ringview.View { return ringview.View{Self: "p"} }
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("m 1\n")) })
	}
	s := newServer(t, newFake(), mod)
	// Derived origins: the request's host name.
	derived := newServer(t, newFake(), mod, func(c *Config) { c.UIOrigin, c.ContentOrigin = ":5001", ":5002" })
	status := func(s *Server, host, remote string, hdr ...string) int {
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/api/status", nil)
		r.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	for _, tc := range []struct {
		name         string
		s            *Server
		host, remote string
		hdr          []string
		want         int
	}{
		{"this machine, by IP", derived, "127.0.0.1:5001", "127.0.0.1:3333", nil, 200},
		{"this machine, localhost", derived, "localhost:5001", "[::1]:3333", nil, 200},
		{"this machine, typed in the address bar", derived, "127.0.0.1:5001", "127.0.0.1:3333", []string{"Sec-Fetch-Site", "none"}, 200},
		{"another machine", derived, "192.168.1.5:5001", "192.168.1.9:3333", nil, 403},
		{"another machine with the token", derived, "192.168.1.5:5001", "192.168.1.9:3333", []string{"Authorization", "Bearer tok"}, 200},
		{"a replayed page (content origin, same site)", derived, "127.0.0.1:5001", "127.0.0.1:3333", []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"another site's page", derived, "127.0.0.1:5001", "127.0.0.1:3333", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"DNS rebinding (a host name that is not local)", derived, "evil.example:5001", "127.0.0.1:3333", nil, 403},
		{"fixed origin, loopback but not an IP host", s, "gw.test", "127.0.0.1:3333", nil, 403},
	} {
		if code := status(tc.s, tc.host, tc.remote, tc.hdr...); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	for _, p := range []string{"/ring", "/metrics"} {
		if w := getUI(t, s, p); w.Code != http.StatusForbidden {
			t.Errorf("%s from elsewhere: %d, want 403", p, w.Code)
		}
	}
	public := newServer(t, newFake(), mod, func(c *Config) { c.PublicStatus = true })
	for _, p := range []string{"/api/status", "/ring", "/metrics"} {
		if w := getUI(t, public, p); w.Code != http.StatusOK {
			t.Errorf("public %s: %d", p, w.Code)
		}
	}
}

// TestPurgeNeedsToken: POST /api/purge reaches Config.Purge only with the
// admin token, never from a page, with exactly one peer id.
func TestPurgeNeedsToken(t *testing.T) {
	const token = "s3cret"
	var got []string
	s := newServer(t, newFake(), func(c *Config) {
		c.AdminToken = token
		c.Purge = func(_ context.Context, peer string) (int, error) {
			got = append(got, peer)
			return 7, nil
		}
	})
	purge := func(body string, hdr ...string) (int, string) {
		r := httptest.NewRequest(http.MethodPost, uiOrigin+"/api/purge", strings.NewReader(body))
		r.RemoteAddr = "127.0.0.1:5555"
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name string
		body string
		hdr  []string
		want int
	}{
		{"no token", "12D3KooWpeer", nil, http.StatusUnauthorized},
		{"token, from another site", "12D3KooWpeer", []string{"Authorization", bearer, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"token, two lines", "12D3KooWa\n12D3KooWb", []string{"Authorization", bearer}, http.StatusBadRequest},
		{"token, empty", "", []string{"Authorization", bearer}, http.StatusBadRequest},
		{"token (herod purge)", " 12D3KooWpeer \n", []string{"Authorization", bearer}, http.StatusOK},
	} {
		code, body := purge(tc.body, tc.hdr...)
		if code != tc.want {
			t.Errorf("%s: %d, want %d (%s)", tc.name, code, tc.want, body)
		}
		if code == http.StatusOK && !strings.Contains(body, `"versions": 7`) {
			t.Errorf("%s: reply %q", tc.name, body)
		}
	}
	if !slices.Equal(got, []string{"12D3KooWpeer"}) {
		t.Errorf("purged %q, want the one accepted request's peer", got)
	}
	s = newServer(t, newFake(), func(c *Config) { c.AdminToken = token })
	if code, _ := purge("12D3KooWpeer", "Authorization", bearer); code != http.StatusNotFound {
		t.Errorf("without Config.Purge: %d, want 404", code)
	}
}
