package crawl

import (
	"context"
	"net/netip"
	"testing"
)

// TestAdmit checks the seed check: scope rules and internal addresses
// refused with their kind and detail, the same addresses admitted when
// AllowPrivate covers them, and nothing queued either way.
func TestAdmit(t *testing.T) {
	ctx := context.Background()
	strict, err := New(t.TempDir(), Config{DenyHosts: []string{"bad.example"}}, newMemArchive(), &loopForwarder{})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	lan, err := New(t.TempDir(), Config{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}, newMemArchive(), &loopForwarder{})
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
