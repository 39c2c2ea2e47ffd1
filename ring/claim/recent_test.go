package claim

import (
	"context"
	"fmt"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// TestFetchSetBounded: the day's fetches held in memory stay within twice
// FetchSetKeys however many URLs are fetched, and a claim for a fetch the
// set let go is still answered "taken", from the store's history.
func TestFetchSetBounded(t *testing.T) {
	ctx := context.Background()
	nw, old, joiner, u, k := formerAndJoiner(t)
	const limit = 64
	fetched := map[string]bool{}
	old.c = New(Config{Peer: old.v.Peer, Ring: old.ring, Transport: nw, FetchSetKeys: limit,
		History: func(_ context.Context, url string, d int64) bool { return d == day && fetched[url] }})
	nw.nodes[old.v.Peer] = old.c
	if got := old.c.ToFetch(ctx, u, k, old.v, day); got != Fetch {
		t.Fatalf("owner without a former owner: %v, want Fetch", got)
	}
	fetched[u] = true
	for i := range 10 * limit {
		v := fmt.Sprintf("http://other.example/%d", i)
		old.c.ToFetch(ctx, v, id.OfString(v), old.v, day)
		fetched[v] = true
		if n := old.c.Held(); n > 2*limit {
			t.Fatalf("after %d fetches %d held, want at most %d", i+1, n, 2*limit)
		}
	}
	if n := old.c.Held(); n < limit {
		t.Fatalf("%d held, want at least the %d most recent", n, limit)
	}
	joined(joiner, old, day)
	if got := joiner.c.ToFetch(ctx, u, k, joiner.v, day); got != Drop {
		t.Fatalf("joiner claiming a URL its former owner fetched long ago today: %v, want Drop", got)
	}
	// Without history the same claim is granted: the set alone no longer
	// holds the fetch (what History is there for).
	delete(fetched, u)
	_, old2, joiner2, u2, k2 := formerAndJoiner(t)
	old2.c.cfg.FetchSetKeys = limit
	old2.c.ToFetch(ctx, u2, k2, old2.v, day)
	for i := range 3 * limit {
		v := fmt.Sprintf("http://other.example/%d", i)
		old2.c.ToFetch(ctx, v, id.OfString(v), old2.v, day)
	}
	joined(joiner2, old2, day)
	if got := joiner2.c.ToFetch(ctx, u2, k2, joiner2.v, day); got != Fetch {
		t.Fatalf("claim for a fetch neither held nor in history: %v, want Fetch", got)
	}
}
