package search

import (
	"context"
	"fmt"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	fts "github.com/herod-archive/herod/search"
)

// TestQueryManyKeys: the second request of a multi-word query, which asks
// a term again for the other terms' candidates, carries up to
// maxReplyPostings URL keys; its holders answer it (a request frame of
// 4 KiB refused any over about 90 keys).
func TestQueryManyKeys(t *testing.T) {
	const k, n = 2, 3000
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 3), k)
	for _, sn := range ns {
		w.add(sn.v)
	}
	ps := make([]fts.Posting, n)
	for i := range ps {
		u := fmt.Sprintf("http://h%d.example/page/%d", i%7, i)
		ps[i] = fts.Posting{Term: "common", Key: id.OfString(u), URL: u, From: 1000, To: fts.Open, TF: 1 + uint32(i%5), DocLen: 10}
	}
	putAt(t, w, ns, ps, k, func(*syncNode, fts.Posting) bool { return false })
	var asker *syncNode
	for _, sn := range ns {
		if !w.holds(sn.v.Peer, fts.TermKey("common"), k) {
			asker = sn
		}
	}
	keys := make([]id.ID, 0, maxReplyPostings)
	want := map[id.ID]bool{}
	for i := 0; i < n && len(keys) < maxReplyPostings; i += 3 {
		keys = append(keys, ps[i].Key)
		want[ps[i].Key] = true
	}
	l, err := asker.sv.Postings(context.Background(), fts.PostingQuery{Term: "common", At: 2000, Keys: keys, Limit: len(keys)})
	if err != nil {
		t.Fatalf("%d keys: %v", len(keys), err)
	}
	if l.DF != n || len(l.Postings) != len(keys) {
		t.Fatalf("%d keys: df %d, %d postings; want %d, %d", len(keys), l.DF, len(l.Postings), n, len(keys))
	}
	for _, p := range l.Postings {
		if !want[p.Key] {
			t.Fatalf("a posting of %s, not asked for", p.URL)
		}
	}
}
