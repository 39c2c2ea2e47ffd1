package query

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/node/identity"
)

// signedStore opens a store that signs with signer (nil: unsigned) and
// verifies provenance.
func signedStore(t *testing.T, name string, signer archive.Signer) *archive.Store {
	t.Helper()
	o := archive.Options{NoSync: true, Verifier: identity.Verifier{}}
	if signer != nil {
		o.Signer = signer
	}
	st, err := archive.Open(filepath.Join(t.TempDir(), name), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func put(t *testing.T, st *archive.Store, url string, at time.Time, body string) archive.Version {
	t.Helper()
	v, _, err := st.Put(context.Background(), archive.Capture{URL: url, Time: at, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVerifiedRows: the asking node lists a member's row only when its
// fetcher's signature verifies and its date is shown here: recent, dated
// by a statement the member sent, or by the holders (Dated). Every other
// row is dropped and counted.
func TestVerifiedRows(t *testing.T) {
	ctx := context.Background()
	keys := make([]identity.Signer, 3) // fetcher, witness, asker
	for i := range keys {
		var err error
		if keys[i], err = identity.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	fetcher, witness, asker := keys[0], keys[1], keys[2]
	now := time.Now().UTC().Truncate(time.Second)
	old := now.AddDate(-20, 0, 0)
	member := &Service{Store: signedStore(t, "member", fetcher)}
	unsigned := &Service{Store: signedStore(t, "unsigned", nil)}

	var vs []archive.Version
	var ps []*Proof
	add := func(svc *Service, v archive.Version, mod func(*Proof)) {
		v, p, err := svc.proofOf(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(&p)
		}
		vs, ps = append(vs, v), append(ps, &p)
	}
	// 0: genuine and recent: listed.
	add(member, put(t, member.Store, "http://h.example/a", now.Add(-time.Hour), "a"), nil)
	// 1: unsigned: dropped.
	add(unsigned, put(t, unsigned.Store, "http://h.example/b", now.Add(-time.Hour), "b"), nil)
	// 2: a genuine signature of another version: dropped.
	add(member, put(t, member.Store, "http://h.example/c", now.Add(-time.Hour), "c"), func(p *Proof) { p.Sig = ps[0].Sig })
	// 3: signed but twenty years old, unwitnessed but for its copy 9.
	add(member, put(t, member.Store, "http://h.example/d", old, "d"), nil)
	// 4: twenty years old, witnessed by another peer an hour after: listed.
	e := put(t, member.Store, "http://h.example/e", old, "e")
	seen := old.Add(time.Hour)
	wsig, err := witness.Sign(archive.WitnessMessage(e.URL, e.Time, e.Digest, seen))
	if err != nil {
		t.Fatal(err)
	}
	good := archive.Witness{Peer: witness.Peer(), Seen: seen, Sig: wsig}
	add(member, e, func(p *Proof) { p.Witnesses = []archive.Witness{good} })
	// 5: twenty years old, "witnessed" by its own fetcher: dropped.
	f := put(t, member.Store, "http://h.example/f", old, "f")
	fsig, err := fetcher.Sign(archive.WitnessMessage(f.URL, f.Time, f.Digest, seen))
	if err != nil {
		t.Fatal(err)
	}
	add(member, f, func(p *Proof) { p.Witnesses = []archive.Witness{{Peer: fetcher.Peer(), Seen: seen, Sig: fsig}} })
	// 6: twenty years old, dated by its holders (Dated): listed.
	add(member, put(t, member.Store, "http://h.example/g", old, "g"), nil)
	// 7, 8: copies of 0 from two more members, one with a forged
	// signature, one genuine: copies, not listed twice (nor checked).
	add(member, vs[0], func(p *Proof) { p.Sig = ps[4].Sig })
	add(member, vs[0], nil)
	// 9: a copy of 3 whose member holds the witness statement that 3's
	// lacked: 3 and 9 are one version, dated by it.
	dsig, err := witness.Sign(archive.WitnessMessage(vs[3].URL, vs[3].Time, vs[3].Digest, seen))
	if err != nil {
		t.Fatal(err)
	}
	add(member, vs[3], func(p *Proof) { p.Witnesses = []archive.Witness{{Peer: witness.Peer(), Seen: seen, Sig: dsig}} })

	asked := 0
	// A ring of 3 and k = 3: every member holds every URL (holders.go).
	fr := newFakeRing(3)
	by := make([]string, len(vs))
	for i := range by {
		by[i] = fr.nodes[1+i%2].Peer
	}
	svc := &Service{Store: signedStore(t, "asker", asker), Ring: fr, Self: fr.nodes[0].Contact, Dated: func(_ context.Context, q []archive.Version) []archive.Dating {
		out := make([]archive.Dating, len(q))
		for i, v := range q {
			asked++
			if v.URL == "http://h.example/g" {
				out[i] = archive.Witnessed
			}
		}
		return out
	}}
	fate, ws, err := svc.judge(ctx, vs, ps, by, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{rowKept, rowDropped, rowDropped, rowKept, rowKept, rowDropped, rowKept, rowCopy, rowCopy, rowCopy}
	for i := range want {
		if fate[i] != want[i] {
			t.Errorf("row %d (%s): fate %d, want %d", i, vs[i].URL, fate[i], want[i])
		}
	}
	if len(ws[4]) != 1 || ws[4][0].Peer != witness.Peer() || len(ws[3]) != 1 {
		t.Errorf("rows 3 and 4 vouched for by %+v and %+v, want the witness", ws[3], ws[4])
	}
	if asked != 2 { // f and g: the others are dated by what came with them
		t.Errorf("%d versions asked of their holders, want 2", asked)
	}
	if got, nh := svc.Unverified(), svc.NotHeld(); got != 3 || nh != 0 {
		t.Errorf("Unverified = %d, NotHeld = %d, want 3 and 0", got, nh)
	}
	if vs[0].Peer != fetcher.Peer() {
		t.Errorf("proofOf: fetcher %q, want %q", vs[0].Peer, fetcher.Peer())
	}
}

// TestMergePages: pages of members are merged in order with duplicates'
// witnesses united; a member whose rows were dropped before its frontier
// cuts the page there, and a page that would be empty before it fails.
func TestMergePages(t *testing.T) {
	row := func(i int, wit ...string) cdx.Row {
		v := archive.Version{URL: "http://h.example/", Time: q0.Add(time.Duration(i) * time.Hour)}
		r := cdx.Row{Version: v}
		for _, w := range wit {
			r.Witnesses = append(r.Witnesses, archive.Witness{Peer: w, Seen: v.Time.Add(time.Minute)})
		}
		return r
	}
	key := func(i int) *cdx.Key { k := cdx.KeyOf(row(i).Version); return &k }
	hours := func(rows []cdx.Row) []int {
		var out []int
		for _, r := range rows {
			out = append(out, int(r.Time.Sub(q0)/time.Hour))
		}
		return out
	}
	honest := memberPage{rows: []cdx.Row{row(3, "w1"), row(4), row(6), row(7)}, more: true, frontier: key(7)}
	liar := memberPage{rows: []cdx.Row{row(1), row(3, "w2")}, more: true, frontier: key(5), dropped: 2, by: "liar"}

	rows, more, err := mergePages([]memberPage{honest, liar}, 10, false)
	if err != nil || !more || !slices.Equal(hours(rows), []int{1, 3, 4}) {
		t.Fatalf("merged %v, more %v, %v; want hours 1 3 4 and more", hours(rows), more, err)
	}
	if len(rows[1].Witnesses) != 2 {
		t.Errorf("duplicate's witnesses %+v, want both", rows[1].Witnesses)
	}
	// Without drops the first n of the union.
	liar.dropped = 0
	rows, more, err = mergePages([]memberPage{honest, liar}, 3, false)
	if err != nil || !more || !slices.Equal(hours(rows), []int{1, 3, 4}) {
		t.Fatalf("no drops: merged %v, more %v, %v", hours(rows), more, err)
	}
	// Every row dropped, sorting first: the member is excluded, the page
	// is the others' (it failed with ErrPartial, every page, before).
	liar = memberPage{more: true, frontier: key(2), dropped: 5, sent: 5, by: "liar"}
	pages := []memberPage{honest, liar}
	rows, more, err = mergePages(pages, 10, false)
	if err != nil || !more || !slices.Equal(hours(rows), []int{3, 4, 6, 7}) || !pages[1].excluded || pages[0].excluded {
		t.Fatalf("all dropped: merged %v, more %v, %v, excluded %v %v", hours(rows), more, err, pages[0].excluded, pages[1].excluded)
	}
	// One true row among made-up ones: excluded too (it cut the page to
	// one row before); its "more" is not believed.
	honest.more = false
	liar = memberPage{rows: []cdx.Row{row(2)}, more: true, frontier: key(2), dropped: 4, sent: 5, by: "liar"}
	pages = []memberPage{honest, liar}
	rows, more, err = mergePages(pages, 10, false)
	if err != nil || more || !slices.Equal(hours(rows), []int{2, 3, 4, 6, 7}) || !pages[1].excluded {
		t.Fatalf("one true row: merged %v, more %v, %v, excluded %v", hours(rows), more, err, pages[1].excluded)
	}
	// A page with a minority of its rows dropped still cuts the page at
	// its frontier.
	liar = memberPage{rows: []cdx.Row{row(1), row(2)}, more: true, frontier: key(2), dropped: 1, by: "lagging"}
	if rows, _, err = mergePages([]memberPage{honest, liar}, 10, false); err != nil || !slices.Equal(hours(rows), []int{1, 2}) {
		t.Fatalf("minority dropped: merged %v, %v; want hours 1 2", hours(rows), err)
	}
}
