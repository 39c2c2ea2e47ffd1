package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func openStore(t testing.TB) *archive.Store {
	t.Helper()
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, GzipLevel: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// corpus is a set of version files: names and verified bytes.
type corpus struct {
	ents []archive.Entry
	data map[archive.Entry][]byte
}

var corpora = map[int]*corpus{}

// makeCorpus returns n distinct version files (built once per size).
func makeCorpus(t testing.TB, n int) *corpus {
	t.Helper()
	if c, ok := corpora[n]; ok {
		return c
	}
	ctx := context.Background()
	s := openStore(t)
	for i := 0; i < n; i++ {
		_, _, err := s.Put(ctx, archive.Capture{
			URL: fmt.Sprintf("http://h%d.example/p%d", i%5, i), Time: t0.Add(time.Duration(i%3) * 24 * time.Hour),
			Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprint("page ", i)),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ents, err := s.Entries(ctx, id.ID{}, id.ID{})
	if err != nil {
		t.Fatal(err)
	}
	c := &corpus{ents: ents, data: map[archive.Entry][]byte{}}
	for _, e := range ents {
		if c.data[e], err = s.ReadFile(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	corpora[n] = c
	return c
}

// fill imports the corpus entries for which keep returns true.
func fill(t testing.TB, s *archive.Store, c *corpus, keep func(i int) bool) {
	t.Helper()
	for i, e := range c.ents {
		if keep(i) {
			if _, _, err := s.Import(context.Background(), e.Name(), c.data[e]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// serve returns a Client whose requests src answers in memory.
func serve(src Source) *Client {
	srv := &Server{Source: src}
	return NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		rep, _ := srv.Handle(ctx, req)
		return rep, nil
	}))
}

func names(t testing.TB, s Peer, a, b id.ID) map[archive.Entry]bool {
	t.Helper()
	ents, err := s.Entries(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	m := map[archive.Entry]bool{}
	for _, e := range ents {
		m[e] = true
	}
	return m
}

func TestSyncInSync(t *testing.T) {
	ctx := context.Background()
	c := makeCorpus(t, 240)
	a, b := openStore(t), openStore(t)
	all := func(int) bool { return true }
	fill(t, a, c, all)
	fill(t, b, c, all)
	half := id.FromBig(new(big.Int).Lsh(big.NewInt(1), id.Bits-1))
	for _, r := range []struct {
		name string
		a, b id.ID
	}{{"whole ring", id.ID{}, id.ID{}}, {"half", id.ID{}, half}, {"wrapping", half, c.ents[3].Key}} {
		st, err := Sync(ctx, a, serve(b), r.a, r.b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: in sync after %d round trip, %d bytes", r.name, st.Traffic.Requests, st.Traffic.Bytes())
		if st.InSync != 1 || st.Traffic.Requests != 1 || st.Pulled != 0 {
			t.Errorf("%s: %+v", r.name, st)
		}
		if st.Traffic.Bytes() > 1024 || st.Traffic.Bytes() == 0 {
			t.Errorf("%s: %d bytes exchanged, want (0, 1024]", r.name, st.Traffic.Bytes())
		}
	}
}

func TestSyncConverges(t *testing.T) {
	ctx := context.Background()
	const n = 240
	c := makeCorpus(t, n)
	for _, tc := range []struct {
		name       string
		onA, onB   func(i int) bool
		wantPulled int   // files a pulls from b
		perDiff    int64 // protocol bytes allowed per differing file (either side)
	}{
		{"b has 4 more", func(i int) bool { return i%60 != 7 }, func(int) bool { return true }, 4, 2048},
		{"b has 16 more", func(i int) bool { return i%15 != 3 }, func(int) bool { return true }, 16, 1024},
		{"both have extras", func(i int) bool { return i%30 != 1 }, func(i int) bool { return i%30 != 2 }, 8, 2048},
		{"a empty", func(int) bool { return false }, func(i int) bool { return i < 100 }, 100, 128},
		{"a has more", func(int) bool { return true }, func(i int) bool { return i%2 == 0 }, 0, 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := openStore(t), openStore(t)
			fill(t, a, c, tc.onA)
			fill(t, b, c, tc.onB)
			diff := 0
			for i := 0; i < n; i++ {
				if tc.onA(i) != tc.onB(i) {
					diff++
				}
			}
			st, err := Sync(ctx, a, serve(b), id.ID{}, id.ID{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if int(st.Pulled) != tc.wantPulled || st.Rejected != 0 || st.Failed != 0 {
				t.Fatalf("pulled %d, want %d: %+v", st.Pulled, tc.wantPulled, st)
			}
			have := names(t, a, id.ID{}, id.ID{})
			for e := range names(t, b, id.ID{}, id.ID{}) {
				if !have[e] {
					t.Fatalf("a lacks %s after sync", e.Name())
				}
			}
			overhead := st.Traffic.Bytes() - st.PulledBytes
			flat := int64(len(names(t, b, id.ID{}, id.ID{}))) * 45 // listing every entry
			t.Logf("%d files differ, %d pulled (%d bytes); %d round trips, %d bytes of protocol (a flat listing: %d)",
				diff, st.Pulled, st.PulledBytes, st.Traffic.Requests, overhead, flat)
			if overhead > tc.perDiff*int64(diff)+1024 {
				t.Errorf("protocol bytes %d exceed %d per differing file", overhead, tc.perDiff)
			}
			if tc.wantPulled >= MaxBatch && st.Traffic.Requests >= int64(tc.wantPulled) {
				t.Errorf("%d round trips for %d records: not batched", st.Traffic.Requests, tc.wantPulled)
			}
			if diff <= 4 && overhead >= flat/2 {
				t.Errorf("protocol bytes %d not below half a flat listing's %d", overhead, flat)
			}
			again, err := Sync(ctx, a, serve(b), id.ID{}, id.ID{}, Options{})
			if err != nil || again.Pulled != 0 {
				t.Fatalf("second sync: %+v, %v", again, err)
			}
		})
	}
}

// halfBatches is a peer whose batch replies leave out the second half of
// every batch, as a full reply does.
type halfBatches struct {
	*archive.Store
	calls int
}

func (h *halfBatches) ReadFiles(ctx context.Context, es []archive.Entry) ([]Fetched, error) {
	h.calls++
	out := make([]Fetched, len(es))
	for i, e := range es {
		if i > 0 && i >= len(es)/2 {
			out[i].Err = ErrOmitted
			continue
		}
		out[i].Data, out[i].Err = h.Store.ReadFile(ctx, e)
	}
	return out, nil
}

// TestSyncBatchOmitted: records a batch reply left out are asked for
// again until every one arrived.
func TestSyncBatchOmitted(t *testing.T) {
	ctx := context.Background()
	c := makeCorpus(t, 40)
	a, b := openStore(t), openStore(t)
	fill(t, b, c, func(int) bool { return true })
	peer := &halfBatches{Store: b}
	st, err := Sync(ctx, a, peer, id.ID{}, id.ID{}, Options{})
	if err != nil || st.Pulled != 40 || st.Failed != 0 {
		t.Fatalf("sync with half batches: %+v, %v", st, err)
	}
	if peer.calls < 2 {
		t.Fatalf("%d batch calls", peer.calls)
	}
}

// hostile is a peer that lies: it lists names outside the range asked
// for and answers ReadFile and ReadStored with bytes that do not match
// the name.
type hostile struct {
	*archive.Store
	mode string
}

func (h hostile) EntriesUpTo(ctx context.Context, a, b id.ID, max int) ([]archive.Entry, error) {
	ents, err := h.Store.EntriesUpTo(ctx, a, b, max)
	if h.mode == "outside" {
		for i := range ents {
			ents[i].Key = a // a is never in (a, b]
		}
	}
	return ents, err
}

func (h hostile) ReadFile(ctx context.Context, e archive.Entry) ([]byte, error) {
	return h.read(ctx, e, h.Store.ReadFile)
}

func (h hostile) ReadStored(ctx context.Context, e archive.Entry) ([]byte, error) {
	return h.read(ctx, e, h.Store.ReadStored)
}

func (h hostile) ReadFileWithin(ctx context.Context, e archive.Entry, room func(int64) bool) ([]byte, error) {
	return h.read(ctx, e, func(ctx context.Context, e archive.Entry) ([]byte, error) {
		return h.Store.ReadFileWithin(ctx, e, room)
	})
}

func (h hostile) ReadStoredWithin(ctx context.Context, e archive.Entry, room func(int64) bool) ([]byte, error) {
	return h.read(ctx, e, func(ctx context.Context, e archive.Entry) ([]byte, error) {
		return h.Store.ReadStoredWithin(ctx, e, room)
	})
}

func (h hostile) read(ctx context.Context, e archive.Entry, read func(context.Context, archive.Entry) ([]byte, error)) ([]byte, error) {
	data, err := read(ctx, e)
	if err != nil {
		return nil, err
	}
	data = append([]byte(nil), data...)
	switch h.mode {
	case "flip":
		data[len(data)/2] ^= 0x40
	case "truncate":
		data = data[:len(data)/2]
	case "swap": // a valid file, under another file's name
		e.Digest[0] ^= 1
		ents, _ := h.Store.Entries(ctx, id.ID{}, id.ID{})
		for _, o := range ents {
			if o != e && o.Key != e.Key {
				return read(ctx, o)
			}
		}
	case "garbage":
		data = []byte("not a warc file at all")
	}
	return data, nil
}

func TestSyncHostilePeer(t *testing.T) {
	ctx := context.Background()
	c := makeCorpus(t, 240)
	for _, mode := range []string{"flip", "truncate", "swap", "garbage", "outside"} {
		t.Run(mode, func(t *testing.T) {
			a, b := openStore(t), openStore(t)
			fill(t, a, c, func(i int) bool { return i%40 == 1 })
			fill(t, b, c, func(i int) bool { return i%10 == 0 })
			before, err := a.RangeSum(ctx, id.ID{}, id.ID{})
			if err != nil {
				t.Fatal(err)
			}
			half := id.FromBig(new(big.Int).Lsh(big.NewInt(1), id.Bits-1))
			st, err := Sync(ctx, a, serve(hostile{b, mode}), id.ID{}, half, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if st.Pulled != 0 || st.Rejected == 0 {
				t.Fatalf("hostile peer: %+v", st)
			}
			after, err := a.RangeSum(ctx, id.ID{}, id.ID{})
			if err != nil {
				t.Fatal(err)
			}
			if after != before {
				t.Fatal("store changed")
			}
			for e := range names(t, a, id.ID{}, id.ID{}) {
				if _, err := a.ReadFile(ctx, e); err != nil {
					t.Fatalf("corrupt file stored: %v", err)
				}
			}
			t.Logf("%s: refused %d files", mode, st.Rejected)
		})
	}
}

// liar answers sums that never agree and returns nothing useful.
type liar struct{ Peer }

func (l liar) RangeSum(ctx context.Context, a, b id.ID) (archive.DirSum, error) {
	return archive.DirSum{Sum: id.Sum(append(a[:], b[:]...)), Count: 1 << 40}, nil
}

func TestSyncBudgetStopsLiar(t *testing.T) {
	a := openStore(t)
	st, err := Sync(context.Background(), a, liar{a}, id.ID{}, id.ID{}, Options{MaxRequests: 50})
	if err == nil || st.Pulled != 0 {
		t.Fatalf("liar: %+v, %v", st, err)
	}
}

func TestSplit(t *testing.T) {
	max := id.FromBig(new(big.Int).Sub(ring, big.NewInt(1)))
	small := id.FromBig(big.NewInt(100))
	for _, tc := range []struct {
		name string
		a, b id.ID
		n    int
		nil_ bool
	}{
		{"whole ring", id.ID{}, id.ID{}, 16, false},
		{"whole ring at max", max, max, 2, false},
		{"plain", id.ID{}, small, 16, false},
		{"wrapping", max, small, 16, false},
		{"exactly n wide", small, id.FromBig(big.NewInt(116)), 16, false},
		{"too narrow", small, id.FromBig(big.NewInt(110)), 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs := Split(tc.a, tc.b, tc.n)
			if tc.nil_ {
				if bs != nil {
					t.Fatalf("split of a narrow range: %v", bs)
				}
				return
			}
			if len(bs) != tc.n+1 || bs[0] != tc.a || bs[tc.n] != tc.b {
				t.Fatalf("bounds %v", bs)
			}
			// Consecutive sub-ranges are non-empty and tile (a, b].
			total := new(big.Int)
			for i := 0; i < tc.n; i++ {
				if bs[i] == bs[i+1] {
					t.Fatalf("empty sub-range %d", i)
				}
				total.Add(total, id.Distance(bs[i], bs[i+1]))
			}
			want := id.Distance(tc.a, tc.b)
			if tc.a == tc.b {
				want = ring
			}
			if total.Cmp(want) != 0 {
				t.Fatalf("sub-ranges cover %v, want %v", total, want)
			}
		})
	}
}

// BenchmarkSyncPull: an empty store that syncs (as shipped, but gzip
// records: no dictionary training) pulls 1,000 records from a peer in
// batched round trips; it reports records/s.
func BenchmarkSyncPull(b *testing.B) {
	ctx := context.Background()
	const n = 1000
	c := makeCorpus(b, n)
	src := openStore(b)
	fill(b, src, c, func(int) bool { return true })
	for range b.N {
		b.StopTimer()
		dst, err := archive.Open(b.TempDir(), archive.Options{DictSamples: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		st, err := Sync(ctx, dst, serve(src), id.ID{}, id.ID{}, Options{})
		b.StopTimer()
		if err != nil || st.Pulled != n {
			b.Fatalf("pulled %d of %d: %v", st.Pulled, n, err)
		}
		dst.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestCopy: Copy imports the offered records peer holds, verified, and
// refuses names outside the range and bytes that do not match their
// name; the answer of an OpOffer is the callback's.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	c := makeCorpus(t, 40)
	src := openStore(t)
	for _, e := range c.ents {
		if _, _, err := src.Import(ctx, e.Name(), c.data[e]); err != nil {
			t.Fatal(err)
		}
	}
	srv := &Server{Source: src}
	cl := NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		rep, _ := srv.Handle(ctx, req)
		return rep, nil
	}))
	dst := openStore(t)
	// The range (ents[4], ents[30]]: 26 records in it, the rest outside.
	a, b := c.ents[4].Key, c.ents[30].Key
	offered := append(append([]archive.Entry(nil), c.ents[:32]...), c.ents[10]) // one named twice
	st, err := Copy(ctx, dst, cl, a, b, offered, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, e := range c.ents {
		if id.InHalfOpen(e.Key, a, b) {
			want++
		}
	}
	if st.Pulled != int64(want) || st.Rejected != int64(32-want) || st.Traffic.Requests != 1 {
		t.Fatalf("copy: %+v, want %d pulled in one round trip, %d rejected", st, want, 32-want)
	}
	if got, _ := dst.RangeSum(ctx, a, b); got.Count != int64(want) {
		t.Fatalf("destination holds %d of (a, b], want %d", got.Count, want)
	}
	// Again: everything is present, nothing is pulled twice, nor even
	// read from the peer (the store is a Holder).
	if st, err = Copy(ctx, dst, cl, a, b, c.ents[5:31], Options{}); err != nil || st.Pulled != 0 || st.Present != 26 || st.Traffic.Requests != 0 {
		t.Fatalf("second copy: %+v, %v; want 26 present, no request", st, err)
	}
	// Import itself answers a held name before it decodes the bytes.
	if _, added, err := dst.Import(ctx, c.ents[5].Name(), []byte("not a record")); err != nil || added {
		t.Fatalf("import of a held name: added %v, %v", added, err)
	}
	// A peer sending other bytes under a name: refused by Import.
	liar := &lyingPeer{Peer: src, data: c.data[c.ents[0]]}
	other := openStore(t)
	if st, err = Copy(ctx, other, liar, id.ID{}, id.ID{}, c.ents[1:3], Options{}); err != nil || st.Rejected != 2 || st.Pulled != 0 {
		t.Fatalf("copy from a lying peer: %+v, %v", st, err)
	}
	// The server hands an offer to its Offer callback and answers its error.
	var got Request
	srv.Offer = func(_ context.Context, r Request) error { got = r; return errors.New("no room") }
	from := Contact{Peer: "p", Addr: "127.0.0.1:1", Index: 2}
	if err := cl.Offer(ctx, a, b, from, c.ents[5:7]); !errors.Is(err, ErrRemote) || got.From != from || len(got.Entries) != 2 {
		t.Fatalf("offer: %v, callback saw %+v", err, got)
	}
	srv.Offer = nil
	if err := cl.Offer(ctx, a, b, from, c.ents[5:7]); !errors.Is(err, ErrRemote) {
		t.Fatalf("offer to a server without Offer: %v", err)
	}
}

// lyingPeer answers every read with the same bytes.
type lyingPeer struct {
	Peer
	data []byte
}

func (p *lyingPeer) ReadFile(context.Context, archive.Entry) ([]byte, error) { return p.data, nil }

// dictStore returns a store that has trained its dictionary on the
// pages it holds, and the versions it holds: its first 20 as gzip
// members, the later ones in its .warc.zst segment.
func dictStore(t *testing.T) (*archive.Store, []archive.Version) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, DictSamples: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var vs []archive.Version
	put := func(i int) {
		page := fmt.Sprintf("<html><head><title>page %d</title></head><body><nav>%s</nav><p>%d %s</p></body></html>",
			i, strings.Repeat("home about archive contact ", 20), i, strings.Repeat(fmt.Sprint(i*7919), 40))
		v, _, err := s.Put(ctx, archive.Capture{URL: fmt.Sprintf("http://h%d.example/p%d", i%5, i), Time: t0,
			Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(page)})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	for i := range 20 {
		put(i)
	}
	tick := time.NewTicker(10 * time.Millisecond) // the training runs in the background
	defer tick.Stop()
	for _, ok := s.OwnDictionary(); !ok; _, ok = s.OwnDictionary() {
		select {
		case <-ctx.Done():
			t.Fatal("no dictionary trained")
		case <-tick.C:
		}
	}
	for i := 20; i < 60; i++ {
		put(i)
	}
	return s, vs
}

// TestSyncCopiesStoredBytes: a sync stores each record as the peer
// stores it (OpReadStored), zstd frames included, asking the peer for its
// dictionary when the local store lacks it; a forged dictionary is
// refused, asked for once in the sync, and its records are not stored.
func TestSyncCopiesStoredBytes(t *testing.T) {
	ctx := context.Background()
	owner, vs := dictStore(t)
	ref, _ := owner.OwnDictionary()
	for _, forge := range []bool{false, true} {
		t.Run(fmt.Sprintf("forged=%v", forge), func(t *testing.T) {
			replica := openStore(t)
			var mu sync.Mutex
			calls := 0
			peer := serve(owner).WithDictionaries(func(ctx context.Context, r archive.DictRef) ([]byte, error) {
				mu.Lock()
				calls++
				mu.Unlock()
				raw, err := owner.Dictionary(r)
				if err != nil {
					return nil, err
				}
				if forge {
					raw = append([]byte(nil), raw...)
					raw[len(raw)-1] ^= 1
				}
				return raw, nil
			})
			st, err := Sync(ctx, replica, peer, id.ID{}, id.ID{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v; dictionary asked for %d times", st, calls)
			if calls == 0 || (forge && calls != 1) {
				t.Fatalf("the owner's dictionary asked for %d times", calls)
			}
			zst := 0
			for _, v := range vs {
				if strings.HasSuffix(v.File, ".warc.zst") {
					zst++
				}
				want, err := owner.ReadStored(ctx, v.Entry())
				if err != nil {
					t.Fatal(err)
				}
				got, err := replica.ReadStored(ctx, v.Entry())
				switch {
				case forge && strings.HasSuffix(v.File, ".warc.zst"):
					if !errors.Is(err, archive.ErrNotFound) {
						t.Fatalf("%s stored with a forged dictionary: %v", v.URL, err)
					}
				case err != nil:
					t.Fatal(err)
				case !bytes.Equal(got, want):
					t.Fatalf("%s (%s): the replica stores other bytes than the owner", v.URL, v.File)
				}
			}
			if zst == 0 {
				t.Fatal("the owner has no zstd record")
			}
			if forge && st.Rejected != int64(zst) {
				t.Fatalf("%d records rejected, want the %d of the forged dictionary", st.Rejected, zst)
			}
			if _, err := replica.Dictionary(ref); forge != errors.Is(err, archive.ErrNotFound) {
				t.Fatalf("replica's copy of the owner's dictionary: %v (forged %v)", err, forge)
			}
		})
	}
}

// TestSyncFromOlderPeer: a peer that does not know OpReadStored (it
// answers "unknown op", as nodes before it do) is read with OpReadBatch,
// gzip members, which the local store keeps as they come.
func TestSyncFromOlderPeer(t *testing.T) {
	ctx := context.Background()
	owner, vs := dictStore(t)
	srv := &Server{Source: owner}
	stored := 0
	old := NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		if Op(req[0]) == OpReadStored {
			stored++
			return errorReply(fmt.Errorf("%w: unknown op %d", ErrProtocol, req[0])), nil
		}
		rep, _ := srv.Handle(ctx, req)
		return rep, nil
	}))
	replica := openStore(t)
	st, err := Sync(ctx, replica, old, id.ID{}, id.ID{}, Options{})
	if err != nil || st.Pulled != int64(len(vs)) || stored != 1 {
		t.Fatalf("%+v %v; OpReadStored asked %d times, want once", st, err, stored)
	}
	for _, v := range vs {
		data, err := replica.ReadStored(ctx, v.Entry())
		if err != nil || data[0] != 0x1f || data[1] != 0x8b {
			t.Fatalf("%s: not kept as the gzip member it came as: %v", v.URL, err)
		}
	}
}
