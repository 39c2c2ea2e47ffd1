package gatewaytest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/memarchive"
)

func TestMem(t *testing.T) {
	m := NewMem()
	TestArchive(t, Harness{Archive: m, Add: m.Add})
	// A second run on the same archive with another base must not be
	// disturbed by the first one's captures.
	TestArchive(t, Harness{Archive: m, Add: m.Add, Base: "again"})
}

// versionOf describes a capture as Mem lists it.
func versionOf(c *archive.Capture) archive.Version { return memarchive.VersionOf(c) }

// at is the suite's default capture day n.
func at(days int) time.Time { return day0.Add(time.Duration(days) * 24 * time.Hour) }

func TestGatewayOverMem(t *testing.T) {
	m := NewMem()
	ctx := context.Background()
	for _, c := range []*archive.Capture{
		{URL: "http://Example.com/", Time: at(0), Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(`<a href="/b">b</a>`)},
		{URL: "http://example.com/b", Time: at(1), Status: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("b")},
	} {
		if err := m.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	s, err := gateway.New(hostOrigins(gateway.Config{Archive: m}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ origin, path, want string }{
		{contentHost, "/web/2025/http://example.com/", `href="/web/2025/http://example.com/b"`},
		{uiHost, "/web/2025/http://example.com/", `src="http://content.test/web/2025/http://example.com/"`},
		{uiHost, "/cdx?url=example.com/*", "com,example)/b 20240302120000"},
		{uiHost, "/web/*/http://example.com/*", `href="/web/*/http://example.com/b"`},
	} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.origin+tc.path, nil))
		if w.Code != 200 || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d, want 200 with %q:\n%.400s", tc.path, w.Code, tc.want, w.Body)
		}
	}
}
