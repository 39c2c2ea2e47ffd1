package purge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/ring"
)

var takedown = access.Rule{SURT: "com,example)/private", Action: access.Block, Reason: "privacy request", Date: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}

// TestAccessOrders: which access orders a Book takes (its own, a listed
// authority's; not a member's, an unsigned or an altered one), that they
// are counted, kept across a reopen, replaced by a later order of the
// same rule and withdrawn by a revocation that an older copy cannot undo.
func TestAccessOrders(t *testing.T) {
	ctx := context.Background()
	self, auth, member := newTestSigner(t), newTestSigner(t), newTestSigner(t)
	path := filepath.Join(t.TempDir(), "orders")
	var ruled [][]access.Rule
	cfg := Config{Path: path, Self: self.Peer(), Authorities: []string{auth.Peer()}, Store: &fakeStore{},
		Verifier: identity.Verifier{}, Skew: time.Minute, Ruled: func(rs []access.Rule) { ruled = append(ruled, rs) }}
	b, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	genuine, err := NewAccessOrder(auth, takedown, false, now)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := genuine
	unsigned.Sig = nil
	altered := genuine
	widened := *genuine.Access
	widened.SURT = "com,"
	altered.Access = &widened
	fromMember, _ := NewAccessOrder(member, takedown, false, now)
	naming := genuine
	naming.Peer = member.Peer()
	for _, tc := range []struct {
		name string
		o    Order
		want error
	}{
		{"a member's rule", fromMember, ErrUnauthorized},
		{"unsigned", unsigned, ErrInvalid},
		{"the authority's rule widened", altered, ErrInvalid},
		{"an access order naming a peer", naming, ErrInvalid},
		{"the authority's rule", genuine, nil},
	} {
		_, _, err := b.Take(ctx, tc.o)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if st := b.Stats(); st.Rules != 1 || st.Refused != 4 {
		t.Errorf("stats %+v: want 1 rule, 4 refused", st)
	}
	if len(ruled) != 1 || len(ruled[0]) != 1 || ruled[0][0].SURT != takedown.SURT {
		t.Fatalf("Ruled heard %v", ruled)
	}
	// Its own operator's rule, issued and taken.
	own := access.Rule{URL: "http://example.org/x", Exact: true, Action: access.Exclude}
	if err := b.IssueAccess(ctx, self, own, false); err != nil {
		t.Fatal(err)
	}
	// Reopened, the book holds both rules.
	b2, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := b2.AccessRules(); len(got) != 2 || !slices.ContainsFunc(got, func(r access.Rule) bool { return r.ID() == takedown.ID() }) {
		t.Fatalf("after reopen: %+v", got)
	}
	// The authority revokes; an older copy of the rule, arriving late,
	// does not bring it back, and the revocation survives a reopen.
	revoke, _ := NewAccessOrder(auth, takedown, true, now.Add(time.Second))
	if _, isNew, err := b2.Take(ctx, revoke); err != nil || !isNew {
		t.Fatalf("revoke: new %t, %v", isNew, err)
	}
	if _, isNew, _ := b2.Take(ctx, genuine); isNew {
		t.Fatal("an older order undid a revocation")
	}
	b3, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := b3.AccessRules(); len(got) != 1 || got[0].ID() != own.ID() {
		t.Fatalf("after revoke and reopen: %+v", got)
	}
	// Read from the file alone, as herod export --data does.
	if got, err := AccessRulesIn(path); err != nil || len(got) != 1 || got[0].ID() != own.ID() {
		t.Fatalf("AccessRulesIn: %+v, %v", got, err)
	}
}

// TestAccessSpread: an authority's rule floods to every member over the
// purge protocol (SpreadLoop), a member that was not reached takes it in
// its next exchange, and a member's own rule is refused by the others.
func TestAccessSpread(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := newTestMembers(t, 4, true)
	late := ms[3]
	for _, m := range ms[:3] {
		m.x.Neighbours = func() []ring.Contact {
			return []ring.Contact{ms[0].contact(), ms[1].contact(), ms[2].contact()}
		}
		go m.x.SpreadLoop(ctx)
	}
	if err := ms[0].book.IssueAccess(ctx, ms[0].signer, takedown, false); err != nil {
		t.Fatal(err)
	}
	ms[0].x.Spread()
	for _, m := range ms[:3] {
		testwait.For(t, "the takedown on every member", 10*time.Second, func() error {
			if got := m.book.AccessRules(); len(got) != 1 || got[0].ID() != takedown.ID() {
				return fmt.Errorf("a member holds %+v", got)
			}
			return nil
		})
	}
	if len(late.book.AccessRules()) != 0 {
		t.Fatal("the late member was reached by the flood")
	}
	if _, err := late.x.Exchange(ctx, ms[1].contact()); err != nil || len(late.book.AccessRules()) != 1 {
		t.Fatalf("late member after an exchange: %v, %d rules", err, len(late.book.AccessRules()))
	}
	// ms[1] is no authority: its rule stays its own.
	if err := ms[1].book.IssueAccess(ctx, ms[1].signer, access.Rule{SURT: "org,", Action: access.Exclude}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ms[1].x.Exchange(ctx, ms[2].contact()); err != nil {
		t.Fatal(err)
	}
	if got := ms[2].book.AccessRules(); len(got) != 1 || ms[2].book.Stats().Refused == 0 {
		t.Fatalf("a member's rule was taken: %+v, %+v", got, ms[2].book.Stats())
	}
}
