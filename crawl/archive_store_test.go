package crawl

import (
	"context"
	"testing"

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
