package resolve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/ring"
)

var t0 = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// ownerRing says owner owns every key and is alone on the ring.
type ownerRing struct{ owner ring.Node }

func (r ownerRing) OwnerVnode(id.ID) (ring.Node, bool) { return ring.Node{}, false }

func (r ownerRing) Lookup(context.Context, id.ID) (ring.Node, error) { return r.owner, nil }

// chainRing says owner owns every key and next succeeds it.
type chainRing struct{ owner, next ring.Node }

func (r chainRing) OwnerVnode(id.ID) (ring.Node, bool) { return ring.Node{}, false }

func (r chainRing) Lookup(_ context.Context, k id.ID) (ring.Node, error) {
	if k == r.owner.ID.AddPow2(0) {
		return r.next, nil
	}
	if k == r.next.ID.AddPow2(0) {
		return r.owner, nil
	}
	return r.owner, nil
}

// lyingSigner signs with one key in the name of another peer.
type lyingSigner struct {
	name string
	key  identity.Signer
}

func (s lyingSigner) Peer() string                    { return s.name }
func (s lyingSigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg) }

// signedStore returns a store signing with signer (a fresh identity if
// nil) and verifying provenance, holding two days of each URL at t0.
func signedStore(t testing.TB, signer archive.Signer, urls ...string) *archive.Store {
	t.Helper()
	if signer == nil {
		s, err := identity.Generate()
		if err != nil {
			t.Fatal(err)
		}
		signer = s
	}
	st, err := archive.Open(filepath.Join(t.TempDir(), "archive"), archive.Options{NoSync: true, Signer: signer, Verifier: identity.Verifier{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	putDays(t, st, t0, 2, urls...)
	return st
}

// putDays puts days versions of each URL from start, a day apart.
func putDays(t testing.TB, st *archive.Store, start time.Time, days int, urls ...string) {
	t.Helper()
	for _, u := range urls {
		for d := range days {
			c := archive.Capture{
				URL: u, Time: start.Add(time.Duration(d) * 24 * time.Hour), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}},
				Body:   []byte(fmt.Sprintf("<p>%s on day %d of %s</p>", u, d, start.Format(time.DateOnly))),
			}
			if _, _, err := st.Put(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// services returns n services on one mock network, the i-th holding
// urls[i] in a signed store; services[1] owns every key (and
// services[2], if any, succeeds it).
func services(t testing.TB, urls ...[]string) ([]*Service, []host.Host) {
	t.Helper()
	hs := p2ptest.Hosts(t, len(urls))
	var svcs []*Service
	for i, us := range urls {
		h := hs[i]
		sv := &Service{Store: signedStore(t, nil, us...), Self: ring.Contact{Peer: h.ID().String(), Addr: h.ID().ShortString()},
			K: 3, Open: p2ptest.Opener(h), Gate: func(network.Stream) bool { return true }, Base: context.Background}
		h.SetStreamHandler(Protocol, sv.Handle)
		svcs = append(svcs, sv)
	}
	var rg Ring = ownerRing{ring.Node{ID: id.OfString("owner"), Contact: svcs[1].Self}}
	if len(svcs) > 2 {
		rg = chainRing{ring.Node{ID: id.OfString("owner"), Contact: svcs[1].Self}, ring.Node{ID: id.OfString("next"), Contact: svcs[2].Self}}
	}
	for _, sv := range svcs {
		sv.Ring = rg
	}
	return svcs, hs
}

// pair is services of two: b owns every key.
func pair(t *testing.T, aURLs, bURLs []string) (a, b *Service) {
	s, _ := services(t, aURLs, bURLs)
	return s[0], s[1]
}

// TestAskOwner: versions and captures come from the owner over Protocol,
// verified; a URL nobody holds is no error for Versions and ErrNotFound
// for Get.
func TestAskOwner(t *testing.T) {
	ctx := context.Background()
	a, b := pair(t, nil, []string{"http://h.example/a"})
	vs, err := a.Versions(ctx, "http://h.example/a")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions: %d, %v", len(vs), err)
	}
	v, c, err := a.Get(ctx, "http://h.example/a", t0.Add(36*time.Hour))
	if err != nil || !v.Time.Equal(t0.Add(24*time.Hour)) || !strings.Contains(string(c.Body), "day 1") {
		t.Fatalf("get: %+v, %v", v, err)
	}
	if bv, _ := b.Store.Versions(ctx, "http://h.example/a"); v.Peer == "" || v.Peer != bv[0].Peer {
		t.Fatalf("get: signed by %q", v.Peer)
	}
	if _, c, err = a.Get(ctx, "http://h.example/a", t0.Add(-time.Hour)); err != nil || !strings.Contains(string(c.Body), "day 0") {
		t.Fatalf("get before the first capture: %v; want the oldest", err)
	}
	if vs, err := a.Versions(ctx, "http://h.example/none"); err != nil || vs != nil {
		t.Fatalf("versions of an unknown URL: %v, %v", vs, err)
	}
	if _, _, err := a.Get(ctx, "http://h.example/none", t0); !errors.Is(err, archive.ErrNotFound) {
		t.Fatalf("get of an unknown URL: %v", err)
	}
	if a.Stats().Rejected != 0 {
		t.Fatalf("rejected %d genuine answers", a.Stats().Rejected)
	}
}

// TestAskReplica: with the owner's handler gone, this node's own store
// (a replica) answers; a non-member and an unknown op are refused.
func TestAskReplica(t *testing.T) {
	ctx := context.Background()
	a, b := pair(t, []string{"http://h.example/a"}, []string{"http://h.example/a"})
	b.Gate = func(s network.Stream) bool { s.Reset(); return false }
	if vs, err := a.Versions(ctx, "http://h.example/a"); err != nil || len(vs) != 2 {
		t.Fatalf("versions from the replica: %d, %v", len(vs), err)
	}
	if _, _, err := a.Get(ctx, "http://h.example/a", t0); err != nil {
		t.Fatalf("get from the replica: %v", err)
	}
	if _, _, err := a.fetchRemote(ctx, b.Self, Request{Op: "versions", URL: "http://h.example/a"}); err == nil {
		t.Fatal("a non-member was answered")
	}
	b.Gate = func(network.Stream) bool { return true }
	if _, _, err := a.fetchRemote(ctx, b.Self, Request{Op: "delete", URL: "http://h.example/a"}); !errors.Is(err, errRemote) {
		t.Fatalf("unknown op: %v", err)
	}
}

// answer replaces h's handler of Protocol with one that answers every
// request with f's reply and record.
func answer(h host.Host, f func(req Request) (Reply, []byte)) {
	h.SetStreamHandler(Protocol, func(s network.Stream) {
		defer s.Close()
		var req Request
		if err := wire.ReadJSON(bufio.NewReader(s), maxRequestFrame, &req); err != nil {
			s.Reset()
			return
		}
		rep, rec := f(req)
		if err := wire.WriteJSON(s, rep); err != nil {
			return
		}
		if rep.Record {
			_ = wire.WriteFrame(s, rec)
		}
	})
}

// TestHostileHolder: an owner that answers with unsigned records, with
// records signed by another key in an honest peer's name, with invented
// versions carrying a genuine signature of another version, or that hides
// versions, gets nothing shown: the asking node serves its own versions
// and the replica's, verified, and counts every rejection.
func TestHostileHolder(t *testing.T) {
	ctx := context.Background()
	const u = "http://h.example/a"
	svcs, hs := services(t, []string{u}, nil, []string{u})
	a, owner, replica := svcs[0], svcs[1], svcs[2]
	// The replica also holds two later days the asking node lacks.
	putDays(t, replica.Store.(*archive.Store), t0.Add(48*time.Hour), 2, u)
	genuine, err := replica.signedVersions(ctx, u)
	if err != nil || len(genuine) != 4 {
		t.Fatalf("replica's versions: %d, %v", len(genuine), err)
	}
	honest := genuine[0].Peer

	// Records a hostile owner may send: unsigned, and signed by its own
	// key in the honest peer's name; both of a URL never crawled, dated
	// 1999, and of u.
	y1999 := time.Date(1999, 6, 1, 0, 0, 0, 0, time.UTC)
	unsigned, err := archive.Open(filepath.Join(t.TempDir(), "unsigned"), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer unsigned.Close()
	hostileKey, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	forged := signedStore(t, lyingSigner{honest, hostileKey})
	for _, st := range []*archive.Store{unsigned, forged} {
		putDays(t, st, y1999, 1, u, "http://h.example/never")
	}
	recordOf := func(st *archive.Store, url string) (archive.Version, []byte) {
		vs, err := st.Versions(ctx, url)
		if err != nil || len(vs) == 0 {
			t.Fatalf("versions of %s: %v", url, err)
		}
		data, err := st.ReadFile(ctx, vs[0].Entry())
		if err != nil {
			t.Fatal(err)
		}
		return vs[0], data
	}
	// An invented version with the signature of a genuine one.
	invented := genuine[0]
	invented.Time, invented.Day = y1999, a.Store.DayOf(y1999)

	for _, tc := range []struct {
		name  string
		store *archive.Store
	}{{"unsigned", unsigned}, {"forged", forged}} {
		t.Run(tc.name, func(t *testing.T) {
			before := a.Stats().Rejected
			answer(hs[1], func(req Request) (Reply, []byte) {
				if req.Op == "versions" {
					v, _ := recordOf(tc.store, req.URL)
					return Reply{Versions: []SignedVersion{{Version: v}, invented}}, nil
				}
				v, rec := recordOf(tc.store, req.URL)
				return Reply{Version: v, Record: true}, rec
			})
			for _, url := range []string{u, "http://h.example/never"} {
				vs, err := a.Versions(ctx, url)
				if err != nil {
					t.Fatalf("versions of %s: %v", url, err)
				}
				for _, v := range vs {
					if v.Time.Year() == 1999 {
						t.Fatalf("invented version of %s shown: %+v", url, v)
					}
				}
				_, c, err := a.Get(ctx, url, y1999)
				if url != u {
					if err == nil {
						t.Fatalf("invented capture of %s served: %q", url, c.Body)
					}
					continue
				}
				if err != nil || c.Time.Year() == 1999 || strings.Contains(string(c.Body), "1999") {
					t.Fatalf("get of %s: %v, %+v", url, err, c)
				}
				if len(vs) != 4 {
					t.Fatalf("versions of %s: %d, want the 4 genuine ones (the replica's merged)", url, len(vs))
				}
			}
			if a.Stats().Rejected == before {
				t.Fatal("no rejection counted")
			}
		})
	}

	t.Run("hiding", func(t *testing.T) {
		answer(hs[1], func(Request) (Reply, []byte) { return Reply{NotFound: true}, nil })
		vs, err := a.Versions(ctx, u)
		if err != nil || len(vs) != 4 {
			t.Fatalf("versions with the owner hiding them: %d, %v", len(vs), err)
		}
		v, _, err := a.Get(ctx, u, t0.Add(80*time.Hour))
		if err != nil || !v.Time.Equal(t0.Add(72*time.Hour)) {
			t.Fatalf("get with the owner hiding it: %v, %v; want the replica's of day 3", v.Time, err)
		}
		// An owner that answers an older version of its own than the
		// asking node holds does not hide the newer one.
		answer(hs[1], func(req Request) (Reply, []byte) {
			return Reply{Version: genuine[0].Version, Record: true}, mustRecord(t, replica, genuine[0].Version)
		})
		v, _, err = a.Get(ctx, u, t0.Add(30*time.Hour))
		if err != nil || !v.Time.Equal(t0.Add(24*time.Hour)) {
			t.Fatalf("get with the owner answering an older version: %v, %v", v.Time, err)
		}
	})

	t.Run("purged", func(t *testing.T) {
		asked := make(chan struct{}, 16)
		answer(hs[1], func(Request) (Reply, []byte) { asked <- struct{}{}; return Reply{NotFound: true}, nil })
		if _, err := a.Store.(*archive.Store).PurgePeer(ctx, owner.Self.Peer); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Versions(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Get(ctx, u, t0); err != nil {
			t.Fatal(err)
		}
		if len(asked) != 0 {
			t.Fatal("a purged peer was asked")
		}
		// The replica's versions signed by a purged peer are not shown.
		if _, err := a.Store.(*archive.Store).PurgePeer(ctx, honest); err != nil {
			t.Fatal(err)
		}
		if vs, err := a.Versions(ctx, u); err != nil || len(vs) != 2 {
			t.Fatalf("versions with their fetcher purged: %d, %v; want this node's own 2", len(vs), err)
		}
	})
}

// mustRecord returns sv's record of v.
func mustRecord(t *testing.T, sv *Service, v archive.Version) []byte {
	data, err := sv.Store.ReadFileWithin(context.Background(), v.Entry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReplyBudget: while replies hold the budget's bytes of records, a "get"
// waits for room until its deadline and is refused (busy); once they
// are written, it is answered.
func TestReplyBudget(t *testing.T) {
	ctx := context.Background()
	a, b := pair(t, nil, []string{"http://h.example/a"})
	// b's requests end within a second: time for a local read, not for
	// the budget to free.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	b.Base = func() context.Context { return short }
	src := &countingStore{Store: b.Store}
	b.Store = src
	all, ok := b.budget().Take(ctx, b.budget().Size(), false)
	if !ok {
		t.Fatal("the budget is not free")
	}
	if _, _, err := a.Get(ctx, "http://h.example/a", t0); err == nil {
		t.Fatal("a get answered while replies held the whole budget")
	}
	if n := src.reads.Load(); n != 0 {
		t.Fatalf("%d records read while replies held the whole budget", n)
	}
	b.budget().Release(all)
	b.Base = context.Background
	if _, c, err := a.Get(ctx, "http://h.example/a", t0); err != nil || !strings.Contains(string(c.Body), "day 0") {
		t.Fatalf("a get once the budget is free: %v", err)
	}
}

// countingStore counts the records it reads once room for them was
// granted.
type countingStore struct {
	Store
	reads atomic.Int64
}

func (c *countingStore) ReadFileWithin(ctx context.Context, e archive.Entry, room func(int64) bool) ([]byte, error) {
	return c.Store.ReadFileWithin(ctx, e, func(n int64) bool {
		ok := room(n)
		if ok {
			c.reads.Add(1)
		}
		return ok
	})
}
