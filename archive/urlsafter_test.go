package archive

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestURLsAfter: walks cut into pieces, each starting after the last
// URL of the one before (or after a URL not in the store), list the
// store's URLs in URLs' order, each once.
func TestURLsAfter(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, u := range []string{"http://b.test/2", "http://a.test/", "http://b.test/1", "http://a.test/x", "http://c.test/", "urn:x:y"} {
		mustPut(t, s, capture(u, at, u))
	}
	var all []string
	if err := s.URLs(ctx, Query{}, func(u string) error { all = append(all, u); return nil }); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	var pieces []string
	after := ""
	for range len(all) + 1 {
		n := 0
		err := s.URLsAfter(ctx, after, func(u string) error {
			if n == 2 {
				return stop
			}
			n++
			pieces, after = append(pieces, u), u
			return nil
		})
		if err == nil {
			break
		}
		if !errors.Is(err, stop) {
			t.Fatal(err)
		}
	}
	if !slices.Equal(pieces, all) {
		t.Errorf("pieces %q, want %q", pieces, all)
	}
	var rest []string
	if err := s.URLsAfter(ctx, "http://b.test/10", func(u string) error { rest = append(rest, u); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := all[slices.Index(all, "http://b.test/2"):]; !slices.Equal(rest, want) {
		t.Errorf("after a URL not in the store: %q, want %q", rest, want)
	}
}
