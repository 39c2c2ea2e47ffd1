package crawl

import (
	"context"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

var _ Archive = (*archive.Store)(nil)

// storeKind runs the shared tests against the real archive.Store.
var storeKind = archiveKind{
	name: "store",
	open: func(t *testing.T) Archive {
		st, err := archive.Open(t.TempDir(), archive.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	},
	versions: func(t *testing.T, a Archive, u string) int {
		vs, err := a.(*archive.Store).Versions(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	},
}

var _ StateToucher = (*archive.Store)(nil)

// TestStoreRevisitWithoutLookup: on a revisit day the crawler hands the
// crawl state it read to the store's TouchState, so a 304 is recorded as
// a check (a revisit for exports) without looking the URL's version up
// again, and a page that changed gets its new version.
func TestStoreRevisitWithoutLookup(t *testing.T) {
	s := newSite(t, map[string]string{
		"/":  links(nil, "/a", "/b"),
		"/a": "<p>a</p>",
		"/b": "<p>b</p>",
	})
	a := storeKind.open(t).(*archive.Store)
	clock := newClock()
	c, _ := startCrawler(t, t.TempDir(), testConfig(clock), a)
	ctx := context.Background()
	if err := c.Add(ctx, []string{s.url("/")}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	s.set("/a", "<p>a2</p>")
	clock.Add(24 * time.Hour)
	if err := c.NewDay(ctx); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, c)
	if st := c.Stats(); st.NotModified != 2 || st.NewVersions != 1 {
		t.Fatalf("day 2 stats %+v", st)
	}
	for _, p := range []string{"/", "/b"} {
		checks, err := a.CheckKinds(ctx, s.url(p))
		if err != nil || len(checks) != 1 || !checks[0].NotModified {
			t.Fatalf("%s: checks %+v, %v", p, checks, err)
		}
	}
	if n := a.Stats().TouchLookups; n != 0 {
		t.Fatalf("%d checks looked their version up", n)
	}
}
