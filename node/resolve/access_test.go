package resolve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
)

// TestAccessServed: a holder's access rules hold for what it serves other
// nodes: an excluded URL's versions are not listed, a blocked one's are
// but its captures are not sent; another URL is served as before.
func TestAccessServed(t *testing.T) {
	ctx := context.Background()
	const gone, blocked, open = "http://h.example/gone", "http://h.example/blocked", "http://h.example/open"
	a, b := pair(t, nil, []string{gone, blocked, open})
	set, _ := access.NewSet([]access.Rule{
		{URL: gone, Action: access.Exclude},
		{URL: blocked, Action: access.Block},
	})
	b.Access = func(u string, tm time.Time) access.Decision { return set.Decide(u, tm, time.Now()) }
	if vs, err := a.Versions(ctx, gone); err != nil || len(vs) != 0 {
		t.Errorf("excluded URL listed to another node: %d versions, %v", len(vs), err)
	}
	if vs, err := a.Versions(ctx, blocked); err != nil || len(vs) != 2 {
		t.Errorf("blocked URL: %d versions listed, %v; want 2", len(vs), err)
	}
	for _, u := range []string{gone, blocked} {
		if _, _, err := a.Get(ctx, u, t0); !errors.Is(err, archive.ErrNotFound) {
			t.Errorf("%s: capture sent to another node: %v", u, err)
		}
	}
	if _, c, err := a.Get(ctx, open, t0); err != nil || c == nil {
		t.Errorf("open URL: %v", err)
	}
	if a.Stats().Rejected != 0 {
		t.Errorf("rejected %d answers", a.Stats().Rejected)
	}
}
