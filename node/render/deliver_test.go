package render

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/ring"
)

// testService returns a Service over store whose node owns the URLs
// owns names.
func testService(t *testing.T, self string, store Store, owns func(string) bool) *Service {
	t.Helper()
	s, err := New(Config{Self: self, Chooser: &Chooser{}, Store: store, Owns: owns,
		Owner:     func(context.Context, id.ID) (ring.Node, error) { return ring.Node{}, errors.New("no ring") },
		Renderers: func() []ring.Contact { return nil },
		HasRole:   func(string) bool { return true },
		Open: func(context.Context, ring.Contact, protocol.ID) (network.Stream, error) {
			return nil, errors.New("no network")
		}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openStore(t *testing.T, signer identity.Signer) *archive.Store {
	t.Helper()
	s, err := archive.Open(filepath.Join(t.TempDir(), "archive"), archive.Options{Signer: signer, Verifier: identity.Verifier{}, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestDeliveryChecks: an owner admits a delivered record only when the
// member sending it signed it, it is marked as captured in a browser, it
// is fresh and its URL is the owner's; an admitted one imports.
func TestDeliveryChecks(t *testing.T) {
	ctx := context.Background()
	renderer, _ := identity.Generate()
	other, _ := identity.Generate()
	owner, _ := identity.Generate()
	src := openStore(t, renderer)
	dst := openStore(t, owner)
	mine := map[string]bool{}
	svc := testService(t, owner.Peer(), dst, func(u string) bool { return mine[u] })

	record := func(u string, browser bool, at time.Time) (string, []byte) {
		t.Helper()
		v, _, err := src.Put(ctx, archive.Capture{URL: u, Time: at, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>" + u), Browser: browser})
		if err != nil {
			t.Fatal(err)
		}
		data, err := src.ReadFile(ctx, v.Entry())
		if err != nil {
			t.Fatal(err)
		}
		return v.Entry().Name(), data
	}
	now := time.Now()
	for _, u := range []string{"http://a.example/ok", "http://a.example/plain", "http://a.example/old"} {
		mine[u] = true
	}
	name, ok := record("http://a.example/ok", true, now)
	_, plain := record("http://a.example/plain", false, now)
	_, old := record("http://a.example/old", true, now.Add(-2*MaxAge))
	_, notMine := record("http://b.example/", true, now)

	if err := svc.admit(renderer.Peer(), ok); err != nil {
		t.Fatalf("a fresh browser record of the owner's URL, from its signer: %v", err)
	}
	for what, c := range map[string]struct {
		from string
		data []byte
	}{
		"from a member that did not sign it": {other.Peer(), ok},
		"not captured in a browser":          {renderer.Peer(), plain},
		"back-dated":                         {renderer.Peer(), old},
		"of another owner's URL":             {renderer.Peer(), notMine},
	} {
		if err := svc.admit(c.from, c.data); !errors.Is(err, ErrRole) {
			t.Errorf("%s: admitted (%v)", what, err)
		}
	}
	if err := svc.admit(renderer.Peer(), append(ok[:len(ok)-8:len(ok)-8], make([]byte, 8)...)); err == nil {
		t.Error("a damaged record admitted")
	}
	if _, added, err := dst.Import(ctx, name, ok); err != nil || !added {
		t.Fatalf("import: %v %v", added, err)
	}
	_, c, err := dst.Get(ctx, "http://a.example/ok", time.Now())
	if err != nil || !c.Browser || c.Peer != renderer.Peer() {
		t.Fatalf("the owner's copy: %+v, %v", c, err)
	}
}
