package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/identity"
)

// holderFixture is a ring of 6 real nodes (k = 3) and a fetcher's store
// with one fresh capture of each URL asked for; the asking node is the
// ring's node 0.
type holderFixture struct {
	fr     *fakeRing
	member *Service // the fetcher's store, which makes the proofs
	svc    *Service // the asking node
}

func newHolderFixture(t *testing.T) *holderFixture {
	fetcher, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	asker, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	fr := newFakeRing(6)
	return &holderFixture{fr: fr,
		member: &Service{Store: signedStore(t, "fetcher", fetcher)},
		svc:    &Service{Store: signedStore(t, "asker", asker), Ring: fr, Self: fr.nodes[0].Contact}}
}

// url returns a URL whose holders (owner first) do not include the
// asking node, and those holders' indexes.
func (f *holderFixture) url(tag string) (string, []int) {
	for i := 0; ; i++ {
		u := fmt.Sprintf("http://h.example/%s/%d", tag, i)
		o := f.fr.owner(id.OfString(u))
		hs := []int{o, (o + 1) % 6, (o + 2) % 6}
		if !slices.Contains(hs, 0) {
			return u, hs
		}
	}
}

// notHolder returns a node, not the asker, that does not hold a URL of
// holders hs.
func notHolder(hs []int) int {
	for i := 1; ; i++ {
		if !slices.Contains(hs, i) {
			return i
		}
	}
}

// row is a fresh signed capture of u with its proof.
func (f *holderFixture) row(t *testing.T, u string) (archive.Version, *Proof) {
	v, p, err := f.member.proofOf(context.Background(), put(t, f.member.Store, u, time.Now().Add(-time.Minute), "made up "+u))
	if err != nil {
		t.Fatal(err)
	}
	return v, &p
}

// TestNotHeldRows: a ring-wide listing keeps another member's signed,
// fresh row only when that member holds its URL (owner or replica), or
// a holder or the asking node lists the same version too; a row only
// non-holders list is dropped and counted as not held, whatever its
// signature says. A holder lookup that fails fails the answer
// (ErrPartial) instead of dropping the row.
func TestNotHeldRows(t *testing.T) {
	ctx := context.Background()
	f := newHolderFixture(t)
	var vs []archive.Version
	var ps []*Proof
	var by []string
	add := func(v archive.Version, p *Proof, node int) {
		vs, ps, by = append(vs, v), append(ps, p), append(by, f.fr.nodes[node].Peer)
	}
	uOwner, hOwner := f.url("owner")
	v, p := f.row(t, uOwner)
	add(v, p, hOwner[0]) // 0: by its owner: kept
	uReplica, hReplica := f.url("replica")
	v, p = f.row(t, uReplica)
	add(v, p, hReplica[2]) // 1: by its last replica only: kept
	uForged, hForged := f.url("forged")
	v, p = f.row(t, uForged)
	add(v, p, notHolder(hForged)) // 2: by a member that does not hold it: not held
	uBoth, hBoth := f.url("both")
	v, p = f.row(t, uBoth)
	add(v, p, notHolder(hBoth)) // 3: by a non-holder, a copy of 4
	add(v, p, hBoth[1])         // 4: and by a replica: kept
	uSelf, hSelf := f.url("self")
	v, p = f.row(t, uSelf)
	add(v, p, notHolder(hSelf)) // 5: by a non-holder, a copy of 6
	add(v, nil, 0)              // 6: and by the asking node itself: kept
	uLone, hLone := f.url("lone")
	v, p = f.row(t, uLone)
	add(v, p, notHolder(hLone)) // 7, 8: by two non-holders: not held
	add(v, p, notHolder(append(hLone, notHolder(hLone))))

	fate, _, err := f.svc.judge(ctx, vs, ps, by, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{rowKept, rowKept, rowNotHeld, rowCopy, rowKept, rowCopy, rowKept, rowNotHeld, rowNotHeld}
	for i := range want {
		if fate[i] != want[i] {
			t.Errorf("row %d (%s by %s): fate %d, want %d", i, vs[i].URL, by[i], fate[i], want[i])
		}
	}
	if nh, unv := f.svc.NotHeld(), f.svc.Unverified(); nh != 3 || unv != 0 {
		t.Errorf("NotHeld %d, Unverified %d; want 3 and 0", nh, unv)
	}
	// Rows of 6 URLs in 6 owner ranges at most: at most one lookup each.
	if f.fr.lookups > 6 {
		t.Errorf("%d holder lookups for 6 URLs", f.fr.lookups)
	}

	// The holders cannot be found: the answer fails, the row is not
	// dropped silently; a version the asking node lists needs no lookup.
	f.fr.lookupErr = errors.New("lookup failed")
	if _, _, err := f.svc.judge(ctx, vs[:1], ps[:1], by[:1], false); !errors.Is(err, ErrPartial) {
		t.Fatalf("failed lookup: %v, want ErrPartial", err)
	}
	if fate, _, err := f.svc.judge(ctx, vs[5:7], ps[5:7], by[5:7], false); err != nil || fate[1] != rowKept {
		t.Fatalf("own row with failed lookups: %v, %v", fate, err)
	}
}

// TestNotHeldPageRows: a ring-wide CDX page (judgePages) keeps the rows
// of the URLs' owner and of a replica, drops a non-holder's row of
// another URL (counted as dropped by its page, which cuts the page at
// its frontier), and a failed holder lookup fails the page.
func TestNotHeldPageRows(t *testing.T) {
	ctx := context.Background()
	f := newHolderFixture(t)
	u1, h1 := f.url("a")
	u2, h2 := f.url("b")
	u3, h3 := f.url("c")
	page := func(node int, us ...string) memberPage {
		mp := memberPage{peer: f.fr.nodes[node].Peer, by: f.fr.nodes[node].Addr}
		for _, u := range us {
			v, p := f.row(t, u)
			mp.rows, mp.proofs = append(mp.rows, cdx.Row{Version: v}), append(mp.proofs, p)
		}
		return mp
	}
	pages := []memberPage{page(h1[0], u1), page(h2[1], u2), page(notHolder(h3), u3)}
	if err := f.svc.judgePages(ctx, pages, true); err != nil {
		t.Fatal(err)
	}
	rows, _, err := mergePages(pages, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, r := range rows {
		urls = append(urls, r.URL)
	}
	slices.Sort(urls)
	if !slices.Equal(urls, []string{u1, u2}) || pages[2].dropped != 1 || f.svc.NotHeld() != 1 {
		t.Fatalf("page rows %v (want %s, %s), non-holder's dropped %d, NotHeld %d", urls, u1, u2, pages[2].dropped, f.svc.NotHeld())
	}

	f.fr.lookupErr = errors.New("lookup failed")
	if err := f.svc.judgePages(ctx, []memberPage{page(h1[1], u1)}, false); !errors.Is(err, ErrPartial) {
		t.Fatalf("failed lookup: %v, want ErrPartial", err)
	}
}

// recordOf is a Verifier that finds in every record the capture of url.
type recordOf string

func (u recordOf) VerifyRecord([]byte) (*archive.Capture, id.ID, error) {
	return &archive.Capture{URL: string(u)}, id.OfString(string(u)), nil
}

// TestNotHeldExport: an export takes another member's record only when
// that member holds its URL; a non-holder's record is left out and
// counted, and a failed lookup leaves it out with the lookup's error.
func TestNotHeldExport(t *testing.T) {
	ctx := context.Background()
	f := newHolderFixture(t)
	u, hs := f.url("x")
	view := f.svc.holderView()
	check := func(node int) error {
		_, _, err := (&heldVerifier{ctx: ctx, inner: recordOf(u), peer: f.fr.nodes[node].Peer, view: view}).VerifyRecord(nil)
		return err
	}
	for _, n := range hs {
		if err := check(n); err != nil {
			t.Errorf("holder %d: %v", n, err)
		}
	}
	if err := check(notHolder(hs)); !errors.Is(err, errNotHolder) || view.notHeld.Load() != 1 {
		t.Errorf("non-holder: %v, counted %d", err, view.notHeld.Load())
	}
	if f.fr.lookups != 1 {
		t.Errorf("%d lookups for one URL, want 1 (cached)", f.fr.lookups)
	}
	f.fr.lookupErr = errors.New("lookup failed")
	view = f.svc.holderView()
	if err := check(hs[0]); err == nil || errors.Is(err, errNotHolder) {
		t.Errorf("failed lookup: %v, want the lookup's error", err)
	}
}

// TestHolderViewSpans: one lookup answers for every key from the one
// asked up to its owner, around the ring's end too.
func TestHolderViewSpans(t *testing.T) {
	fr := newFakeRing(4)
	svc := &Service{Ring: fr}
	h := svc.holderView()
	ctx := context.Background()
	last := fr.nodes[3].ID
	for _, step := range []struct {
		key     id.ID
		lookups int
	}{
		{fr.nodes[1].ID.AddPow2(0), 1}, // just past node 1: owned by node 2
		{fr.nodes[2].ID, 1},            // node 2 itself: cached
		{fr.nodes[1].ID.AddPow2(2), 1}, // between the two: cached
		{last.AddPow2(0), 2},           // past the last node: node 0's range
		{id.ID{}, 2},                   // wrapped around: cached
		{fr.nodes[0].ID, 2},
		{fr.nodes[0].ID.AddPow2(0), 3}, // node 1's range
		{fr.nodes[1].ID, 3},
		{fr.nodes[1].ID.AddPow2(1), 3}, // node 2's again
	} {
		s, err := h.span(ctx, step.key)
		if err != nil || fr.lookups != step.lookups {
			t.Fatalf("key %s: %v, %d lookups, want %d", step.key.Short(), err, fr.lookups, step.lookups)
		}
		if o := fr.nodes[fr.owner(step.key)].Peer; s.peers[0] != o {
			t.Fatalf("key %s: owner %s, want %s", step.key.Short(), s.peers[0], o)
		}
	}
}

// TestHolderViewConcurrent: goroutines asking about keys of many owners
// at once each get their own key's holders, while others' lookups insert
// spans into the cache (run with -race).
func TestHolderViewConcurrent(t *testing.T) {
	fr := newFakeRing(512)
	h := (&Service{Ring: fr}).holderView()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				key := id.OfString(fmt.Sprintf("http://host%d.example/%d", g, i))
				o := fr.owner(key)
				holder := fr.nodes[(o+2)%len(fr.nodes)].Peer
				other := fr.nodes[(o+3)%len(fr.nodes)].Peer
				if ok, err := h.holds(ctx, holder, key); !ok || err != nil {
					t.Errorf("key %s: holder %s not found (%v)", key.Short(), holder, err)
					return
				}
				if ok, err := h.holds(ctx, other, key); ok || err != nil {
					t.Errorf("key %s: %s counted a holder (%v)", key.Short(), other, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
