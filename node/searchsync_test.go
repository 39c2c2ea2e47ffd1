package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/search"
)

// TestSearchSyncRing: on a ring of real nodes, postings that reached one
// holder of their terms only (the others down, or the delivery lost)
// reach every holder by the posting sync, no owner restarting; a second
// round finds every pair in sync.
func TestSearchSyncRing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const k = 3
	lr := startStableRing(ctx, t, t.TempDir(), 4, Config{VirtualServers: 2, StabilizeInterval: 100 * time.Millisecond, Replicas: k})
	defer lr.Close()
	var ps []search.Posting
	for i := range 600 {
		u := fmt.Sprintf("http://sync.example/%d", i%50)
		ps = append(ps, search.Posting{Term: fmt.Sprintf("term%d", i/50), Key: id.OfString(u), URL: u,
			From: 1000, To: search.Open, TF: 1, DocLen: 9})
	}
	// Each posting reaches its term's last holder only.
	for _, p := range ps {
		hs := lr.holders(search.TermKey(p.Term), k)
		if err := hs[len(hs)-1].searchStore.Put(ctx, []search.Posting{p}); err != nil {
			t.Fatal(err)
		}
	}
	missing := func() error {
		for _, p := range ps {
			for _, n := range lr.holders(search.TermKey(p.Term), k) {
				l, err := n.searchStore.Postings(ctx, search.PostingQuery{Term: p.Term, At: 2000, Keys: []id.ID{p.Key}})
				if err != nil {
					return err
				}
				if len(l.Postings) != 1 {
					return fmt.Errorf("%s lacks %s of %s", n.Multiaddr(), p.Term, p.URL)
				}
			}
		}
		return nil
	}
	if missing() == nil {
		t.Fatal("every holder has the postings before any sync")
	}
	for _, n := range lr.Nodes {
		if err := n.search.SyncRound(ctx); err != nil {
			t.Logf("round: %v", err)
		}
	}
	testwait.For(t, "every holder holds its terms' postings", time.Minute, missing)
	testwait.For(t, "pull requests served", time.Minute, func() error {
		for i, n := range lr.Nodes {
			if p := n.SearchStats().Sync.Pending; p > 0 {
				return fmt.Errorf("node %d: %d pull requests", i, p)
			}
		}
		return nil
	})
	pulled := int64(0)
	for _, n := range lr.Nodes {
		pulled += n.SearchStats().Sync.Pulled
	}
	if want := int64(len(ps) * (k - 1)); pulled < want {
		t.Errorf("%d postings pulled, want at least %d", pulled, want)
	}
	inSync := func() (s int64) {
		for _, n := range lr.Nodes {
			s += n.SearchStats().Sync.InSync
		}
		return s
	}
	// The nodes' own rounds (every 30 s, and 1 s after a ring change) may
	// run meanwhile and add pairs in sync; none may pull anything.
	pulledNow := func() (s int64) {
		for _, n := range lr.Nodes {
			s += n.SearchStats().Sync.Pulled
		}
		return s
	}
	before, pulledBefore := inSync(), pulledNow()
	for _, n := range lr.Nodes {
		if err := n.search.SyncRound(ctx); err != nil {
			t.Errorf("second round: %v", err)
		}
	}
	if got := inSync() - before; got < int64(len(lr.Nodes)*2*(k-1)) {
		t.Errorf("second round: %d pairs in sync, want at least %d", got, len(lr.Nodes)*2*(k-1))
	}
	if got := pulledNow() - pulledBefore; got != 0 {
		t.Errorf("second round pulled %d postings, want none", got)
	}
}
