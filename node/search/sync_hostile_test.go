package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	fts "github.com/herod-archive/herod/search"
)

// TestSyncHostile: a holder that answers sync with invented postings
// outside the range asked, malformed, with a URL key not its URL's,
// more than asked, or past the node's MaxPostings gets none of them
// stored, and a member's pull request for a range it does not own is
// refused.
func TestSyncHostile(t *testing.T) {
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 2), 2)
	victim, liar := ns[0], ns[1]
	for _, n := range ns {
		w.add(n.v)
	}
	mine := KeyRange{From: liar.v.ID, To: victim.v.ID}
	// valid returns n good postings of terms in (or, out: outside) the
	// victim's range.
	valid := func(n int, in bool) []fts.Posting {
		var ps []fts.Posting
		for i := 0; len(ps) < n; i++ {
			term := fmt.Sprintf("t%d", i)
			if mine.Has(fts.TermKey(term)) != in {
				continue
			}
			u := fmt.Sprintf("http://invented.example/%d", i)
			ps = append(ps, fts.Posting{Term: term, Key: id.OfString(u), URL: u, From: 1, To: fts.Open, TF: 1, DocLen: 5})
		}
		return ps
	}
	cases := []struct {
		name    string
		answer  func(limit int) (int, []fts.Posting)
		max     int64
		refused bool // counted in SyncStats.Refused
	}{
		{"outside the range", func(int) (int, []fts.Posting) { return 10, valid(10, false) }, 0, true},
		{"malformed", func(int) (int, []fts.Posting) {
			ps := valid(10, true)
			ps[3].TF = 0
			return 10, ps
		}, 0, true},
		{"URL key not the URL's", func(int) (int, []fts.Posting) {
			ps := valid(10, true)
			ps[5].Key = id.OfString("elsewhere")
			return 10, ps
		}, 0, true},
		{"more than asked", func(limit int) (int, []fts.Posting) { return limit + 1, valid(limit+1, true) }, 0, false},
		{"past MaxPostings", func(int) (int, []fts.Posting) { return 10, valid(10, true) }, 5, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			liar.k.Remove(SyncProtocol)
			if err := liar.k.Handle(kit.Spec{ID: SyncProtocol, MaxFrame: syncFrame, MaxRequest: syncFrame + 16,
				Handle: func(_ context.Context, q *kit.Request) error {
					var req syncRequest
					if err := q.ReadJSON(syncFrame, &req); err != nil {
						return err
					}
					switch req.Op {
					case opSums:
						sums := make([]RangeSum, len(req.Ranges))
						for i := range sums {
							sums[i] = RangeSum{Count: 10, XOR: id.OfString("lie")}
						}
						return q.Reply(syncReply{Sums: sums})
					case opList:
						n, ps := tc.answer(req.Limit)
						if err := q.Reply(syncReply{Postings: n}); err != nil {
							return err
						}
						return wire.WriteFrame(q.Stream(), encodeAdd(ps))
					}
					return q.Reply(syncReply{})
				}}); err != nil {
				t.Fatal(err)
			}
			victim.sv.MaxPostings = tc.max
			before := victim.sv.SyncStats().Refused
			_, err := victim.sv.pullRange(context.Background(), liar.v.Contact, mine)
			if err == nil {
				t.Fatal("no error")
			}
			if n := victim.sv.Store.Counts().Postings; n != 0 {
				t.Errorf("%d invented postings stored", n)
			}
			if got := victim.sv.SyncStats().Refused - before; tc.refused && got == 0 {
				t.Errorf("nothing counted as refused (%v)", err)
			}
			if tc.max > 0 && !errors.Is(err, ErrIndexFull) {
				t.Errorf("past MaxPostings: %v, want ErrIndexFull", err)
			}
		})
	}
	t.Run("pull request for another's range", func(t *testing.T) {
		// The liar asks the victim to pull the victim's own range from
		// it, then a range that ends at its own virtual server but starts
		// inside the victim's, then the whole circle.
		for _, r := range []KeyRange{mine, {From: split(mine, 2)[0].To, To: liar.v.ID}, {From: liar.v.ID, To: liar.v.ID}} {
			_, _, err := liar.sv.syncCall(context.Background(), victim.v.Contact, syncRequest{Op: opPull, Ranges: []KeyRange{r}})
			if !errors.Is(err, errRemote) {
				t.Errorf("pull of (%s, %s]: %v, want refused", r.From.Short(), r.To.Short(), err)
			}
		}
		// Its own range is a pull the victim takes.
		own := KeyRange{From: victim.v.ID, To: liar.v.ID}
		if _, _, err := liar.sv.syncCall(context.Background(), victim.v.Contact, syncRequest{Op: opPull, Ranges: []KeyRange{own}}); err != nil {
			t.Errorf("pull of the liar's own range: %v", err)
		}
	})
	// A member's request that breaks the protocol is reset by the kit.
	t.Run("bad frames", func(t *testing.T) {
		for _, req := range []syncRequest{{Op: opSums}, {Op: "gossip", Ranges: []KeyRange{mine}}, {Op: opSums, Ranges: make([]KeyRange, maxSyncRanges+1)}} {
			if _, _, err := liar.sv.syncCall(context.Background(), victim.v.Contact, req); err == nil {
				t.Errorf("%s of %d ranges: no error", req.Op, len(req.Ranges))
			}
		}
	})
}

// TestSyncAskRole: a member asks a holder for the digests and postings
// of ranges they both hold, within one virtual server's range; a member
// that does not hold the range, or a request that spans several ranges
// (a scan of the whole store), is refused.
func TestSyncAskRole(t *testing.T) {
	ctx := context.Background()
	const k = 2
	w := &world{}
	ns := syncRing(t, w, p2ptest.Hosts(t, 4), k)
	for _, n := range ns {
		w.add(n.v)
	}
	// ns[i] sits at (2i+1)/8 of the circle: ns[1] owns (ns[0], ns[1]],
	// held by ns[1] and ns[2] (k = 2).
	owner, holder, outsider := ns[1], ns[2], ns[3]
	r := KeyRange{From: ns[0].v.ID, To: owner.v.ID}
	ask := func(from *syncNode, rs []KeyRange) error {
		rep, _, err := from.sv.syncCall(ctx, holder.v.Contact, syncRequest{Op: opSums, Ranges: rs})
		if err == nil && rep.Error != "" {
			err = errors.New(rep.Error)
		}
		return err
	}
	if err := ask(owner, []KeyRange{r}); err != nil {
		t.Fatalf("the owner asks a holder for its range: %v", err)
	}
	if err := ask(owner, split(r, syncSplit)); err != nil {
		t.Fatalf("the owner asks for its range's parts: %v", err)
	}
	if err := ask(outsider, []KeyRange{r}); err == nil || !strings.Contains(err.Error(), ErrSyncRole.Error()) {
		t.Fatalf("a member that does not hold the range: %v, want refused", err)
	}
	whole := KeyRange{From: ns[0].v.ID, To: ns[3].v.ID}
	if err := ask(owner, []KeyRange{whole}); err == nil || !strings.Contains(err.Error(), ErrSyncRole.Error()) {
		t.Fatalf("a range over three virtual servers: %v, want refused", err)
	}
	if err := ask(owner, []KeyRange{{From: r.From, To: r.From}}); err == nil {
		t.Fatal("the whole circle: answered, want refused")
	}
}
