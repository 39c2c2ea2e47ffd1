package access

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse feeds rules files to Parse and every rule it accepts to a
// Set: no panic, and an accepted rule decides its own URL's captures.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"surt":"com,example)/","action":"block","status":403,"reason":"r"}`,
		`{"url":"http://example.com/a","exact":true,"action":"allow"}` + "\n# c\n" + `{"surt":"*","action":"block","embargo":"1y"}`,
		`{"url":"example.com","action":"exclude","after":"2020-01-01T00:00:00Z","before":"2021-01-01T00:00:00Z"}`,
		`{"surt":"com,","action":"purge","embargo":86400}`,
		`{"url":"http://[::1]:8080/x?b=1&a=2","action":"block"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rules, err := Parse(b)
		if err != nil {
			return
		}
		s, bad := NewSet(rules)
		if bad != nil {
			t.Fatalf("Parse accepted rules NewSet refuses: %v", bad)
		}
		now := time.Now()
		for _, r := range rules {
			if r.URL != "" {
				s.Decide(r.URL, now, now)
			}
		}
	})
}

// FuzzSURT: SURT never panics, and keys a canonical URL as archive.Surt.
func FuzzSURT(f *testing.F) {
	for _, s := range []string{"http://www.example.com/a?b=1", "https://x.y:8443/", "example.org", "http://1.2.3.4/", "ftp://a/", "http://[::1]/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		k, err := SURT(u)
		if err == nil && k == "" {
			t.Fatalf("SURT(%q) is empty", u)
		}
	})
}

// TestWatch: a change to the file reaches the table within the interval
// Watch polls at, without a call to Reload.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules")
	tab := NewTable(nil)
	f, err := OpenFile(path, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Watch(ctx, 5*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	gen := tab.Generation()
	if err := os.WriteFile(path, []byte(`{"surt":"com,a)/","action":"exclude"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tab.Generation() == gen {
		if time.Now().After(deadline) {
			t.Fatal("the file's change was not loaded")
		}
		time.Sleep(time.Millisecond)
	}
	if tab.Decide("http://a.com/x", time.Now()).Action != Exclude {
		t.Fatal("the reloaded rule is not in force")
	}
}
