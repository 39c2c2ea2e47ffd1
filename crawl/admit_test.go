package crawl

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// TestAdmit checks the seed check: scope rules and internal addresses
// refused with their kind and detail, the same addresses admitted when
// AllowPrivate covers them, and nothing queued either way.
func TestAdmit(t *testing.T) {
	ctx := context.Background()
	strict, err := New(t.TempDir(), Config{DenyHosts: []string{"bad.example"}}, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	lan, err := New(t.TempDir(), Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}, depsOf(newMemArchive(), &loopForwarder{}))
	if err != nil {
		t.Fatal(err)
	}
	defer lan.Close()
	for _, tc := range []struct {
		c               *Crawler
		raw             string
		kind, detail, u string
	}{
		{strict, "http://10.0.0.7/x", KindInternal, "10.0.0.7", ""},
		{strict, "http://127.0.0.1:8080/", KindInternal, "127.0.0.1", ""},
		{strict, "http://[::1]:8080/", KindInternal, "::1", ""},
		{strict, "http://LOCALHOST/", KindInternal, "127.0.0.1", ""},
		{strict, "http://app.localhost/", KindInternal, "127.0.0.1", ""},
		{strict, "http://[::ffff:192.168.1.1]/", KindInternal, "192.168.1.1", ""},
		{strict, "http://1.2.3.4/page?q=1", KindDynamic, "", ""},
		{strict, "http://www.bad.example/", KindHostDenied, "www.bad.example", ""},
		{strict, "mailto:a@b", KindBadURL, "", ""},
		{strict, "http://1.2.3.4/a/a/a/a/", KindTrap, "", ""},
		{strict, "http://1.2.3.4/", "", "", "http://1.2.3.4/"},
		{lan, "http://10.0.0.7/x", "", "", "http://10.0.0.7/x"},
		{lan, "http://[::1]:8080/", "", "", "http://[::1]:8080/"},
		{lan, "http://192.168.1.1/", KindInternal, "192.168.1.1", ""},
	} {
		u, kind, detail := tc.c.Admit(ctx, tc.raw)
		if u != tc.u || kind != tc.kind || detail != tc.detail {
			t.Errorf("Admit(%q) = %q %q %q, want %q %q %q", tc.raw, u, kind, detail, tc.u, tc.kind, tc.detail)
		}
	}
	if q := strict.Queued() + lan.Queued(); q != 0 {
		t.Errorf("Admit queued %d URLs", q)
	}
}

// TestInternalRefusalNotSeen: a URL the crawl refuses because its host is
// at an internal address is not left in the day's URL-seen set, so that
// offered again the same day (after the operator allowed the address) it
// is queued again; the refusal names the flag.
func TestInternalRefusalNotSeen(t *testing.T) {
	srv, hits := serveOn(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>lan</p>"))
	})
	cfg := testConfig(newClock())
	cfg.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")} // not the server's 127.0.0.1
	c, _ := startCrawler(t, t.TempDir(), cfg, newMemArchive())
	ctx := context.Background()
	u := srv.URL + "/page"
	for round := 1; round <= 2; round++ {
		n, err := c.add(ctx, []string{u})
		if err != nil || n != 1 {
			t.Fatalf("offer %d: queued %d, %v; want 1", round, n, err)
		}
		waitIdle(t, c)
		if got := c.Stats().ErrorsByKind[KindInternal]; got != int64(round) {
			t.Fatalf("offer %d: %d internal refusals; stats %+v", round, got, c.Stats())
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the internal server got %d requests", hits.Load())
	}
	if err := newGuard(nil).check(netip.MustParseAddr("127.0.0.1")); err == nil || !strings.Contains(err.Error(), "--allow-private 127.0.0.1") {
		t.Errorf("refusal %v does not name --allow-private", err)
	}
}
