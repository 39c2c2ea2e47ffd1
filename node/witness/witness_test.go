package witness

import (
	"context"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/ring"
)

// peerNode is a libp2p host with an Ed25519 identity, its store signed by
// that identity and its witness service.
type peerNode struct {
	h     host.Host
	store *archive.Store
	sv    *Service
}

func (p *peerNode) contact() ring.Contact { return ring.Contact{Peer: p.h.ID().String()} }

// world is a mock network of peerNodes sharing a clock; every key is held
// by the nodes in holders.
type world struct {
	t       *testing.T
	mn      mocknet.Mocknet
	now     time.Time
	holders []*peerNode
}

func newWorld(t *testing.T) *world {
	mn := mocknet.New()
	t.Cleanup(func() { mn.Close() })
	return &world{t: t, mn: mn, now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
}

func (w *world) node(i int) *peerNode {
	t := w.t
	sk, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := w.mn.AddPeer(sk, ma.StringCast("/ip4/127.0.0.1/tcp/4001"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	signer, err := identity.NewSigner(sk)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return w.now }
	s, err := archive.Open(t.TempDir(), archive.Options{Signer: signer, Verifier: identity.Verifier{}, Now: clock, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p := &peerNode{h: h, store: s}
	p.sv = &Service{
		Store: s, Self: p.contact(), Now: clock,
		Holders: func(context.Context, id.ID) ([]ring.Contact, error) {
			var cs []ring.Contact
			for _, q := range w.holders {
				cs = append(cs, q.contact())
			}
			return cs, nil
		},
		Open: p2ptest.Opener(h),
	}
	h.SetStreamHandler(Protocol, p.sv.Handle)
	return p
}

func put(t *testing.T, s *archive.Store, url string, at time.Time, body string) archive.Version {
	t.Helper()
	v, _, err := s.Put(context.Background(), archive.Capture{URL: url, Time: at, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func copyTo(t *testing.T, dst, src *archive.Store, v archive.Version) archive.Version {
	t.Helper()
	ctx := context.Background()
	data, err := src.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := dst.Import(ctx, v.Entry().Name(), data)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// listArchive is a gateway archive that answers from one store: the
// owner's answer as the reader's node receives it.
type listArchive struct{ s *archive.Store }

func (a listArchive) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	return a.s.Versions(ctx, url)
}

func (a listArchive) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	return a.s.Get(ctx, url, t)
}

// TestBackDatedHiddenEverywhere: a member signs a capture dated twenty
// years back next to a genuine one; a month later a reader's node that
// holds neither shows the genuine one (its replica's statement, asked
// over Protocol) and not the back-dated one; a joiner that pulls both
// from the replica dates the genuine one by CatchUp and keeps the other
// hidden.
func TestBackDatedHiddenEverywhere(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	fetcher, replica, reader := w.node(0), w.node(1), w.node(2)
	w.holders = []*peerNode{fetcher, replica}
	const url = "http://example.org/page"
	genuine := put(t, fetcher.store, url, w.now.Add(-time.Minute), "genuine")
	forged := put(t, fetcher.store, url, w.now.AddDate(-20, 0, 0), "back-dated")
	copyTo(t, replica.store, fetcher.store, genuine)
	copyTo(t, replica.store, fetcher.store, forged)

	w.now = w.now.AddDate(0, 1, 0)
	gw := &Archive{Inner: listArchive{fetcher.store}, Witness: reader.sv}
	vs, err := gw.Versions(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Digest != genuine.Digest {
		t.Fatalf("reader's versions: %+v; want the genuine one only", vs)
	}
	// Asked as of 2006, the reader gets the genuine capture, never the
	// back-dated one.
	v, c, err := gw.Get(ctx, url, w.now.AddDate(-20, 0, 0))
	if err != nil || v.Digest != genuine.Digest || string(c.Body) != "genuine" {
		t.Fatalf("Get as of 2006: %+v, %v", v, err)
	}
	if st := reader.sv.Stats(); st.Hidden != 2 {
		t.Errorf("hidden: %d, want 2 (left out of the listing, and of Get's)", st.Hidden)
	}

	// The banner's account of the genuine capture names the replica, and
	// asking again is answered from memory, not by the replica.
	d, ws := reader.sv.Vouch(ctx, genuine)
	if d != archive.Witnessed || len(ws) != 1 || ws[0].Peer != replica.contact().Peer {
		t.Fatalf("Vouch: %v by %+v, want witnessed by the replica", d, ws)
	}
	answered := replica.sv.Stats().Answered
	if d2, ws2 := reader.sv.Vouch(ctx, genuine); d2 != d || len(ws2) != 1 || replica.sv.Stats().Answered != answered {
		t.Fatalf("second Vouch: %v %+v, replica answered %d more", d2, ws2, replica.sv.Stats().Answered-answered)
	}

	joiner := w.node(3)
	gJ := copyTo(t, joiner.store, replica.store, genuine)
	fJ := copyTo(t, joiner.store, replica.store, forged)
	if d, _, _ := joiner.store.Date(ctx, gJ, nil); d != archive.Unwitnessed {
		t.Fatalf("joiner's month-old copy before CatchUp: %v", d)
	}
	n, err := joiner.sv.CatchUp(ctx)
	if err != nil || n != 1 {
		t.Fatalf("CatchUp dated %d, %v; want 1", n, err)
	}
	if d, _, _ := joiner.store.Date(ctx, gJ, nil); d != archive.Witnessed {
		t.Errorf("joiner's genuine copy after CatchUp: %v, want witnessed", d)
	}
	if d, _, _ := joiner.store.Date(ctx, fJ, nil); d != archive.Unwitnessed {
		t.Errorf("joiner's back-dated copy after CatchUp: %v, want unwitnessed", d)
	}
	// Both of the replica's statements verify and are kept; only the
	// genuine capture's is in time.
	if st := joiner.sv.Stats(); st.Undated != 1 || st.Fetched != 2 {
		t.Errorf("joiner stats %+v: want 1 undated left, 2 statements fetched", st)
	}
}

// TestAskBounds: a request naming more than MaxAsk versions is refused
// before it is read; a holder answering for a version it does not hold
// answers nothing.
func TestAskBounds(t *testing.T) {
	w := newWorld(t)
	a, b := w.node(0), w.node(1)
	vs := make([]archive.Version, MaxAsk+1)
	if _, err := a.sv.Ask(context.Background(), b.contact(), vs); err == nil {
		t.Fatal("Ask of MaxAsk+1 versions: no error")
	}
	v := archive.Version{URL: "http://example.org/x", Key: id.OfString("http://example.org/x"), Time: w.now}
	ws, err := a.sv.Ask(context.Background(), b.contact(), []archive.Version{v})
	if err != nil || len(ws) != 1 || len(ws[0]) != 0 {
		t.Fatalf("Ask for a version not held: %v, %v", ws, err)
	}
}
