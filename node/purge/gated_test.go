package purge

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// TestIssue: the operator's order is carried out at once and passed on;
// an order against the node itself is refused before anything happens.
func TestIssue(t *testing.T) {
	ctx := context.Background()
	self, other := newTestSigner(t), newTestSigner(t)
	store := &fakeStore{}
	taken := 0
	b, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "orders"), Self: self.Peer(), Store: store,
		Verifier: identity.Verifier{}, Taken: func(string) { taken++ }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Issue(ctx, self, self.Peer()); err == nil || store.times(self.Peer()) != 0 {
		t.Fatalf("own captures: %v, purged %d times", err, store.times(self.Peer()))
	}
	if _, err := b.Issue(ctx, self, "not a peer"); err == nil {
		t.Fatal("an order against no peer id was issued")
	}
	removed, err := b.Issue(ctx, self, other.Peer())
	if err != nil || removed != 5 || store.times(other.Peer()) != 1 || taken != 1 {
		t.Fatalf("Issue = %d, %v; purged %d times, passed on %d", removed, err, store.times(other.Peer()), taken)
	}
}

// importLocal is a replicate.Local that reports whether a purge held
// the Book while it imported.
type importLocal struct {
	replicate.Local
	b    *Book
	held bool
}

func (l *importLocal) Import(context.Context, string, []byte) (archive.Version, bool, error) {
	l.held = !l.b.importMu.TryLock()
	if !l.held {
		l.b.importMu.Unlock()
	}
	return archive.Version{}, true, nil
}

// condLocal is an importLocal that is a replicate.CondImporter.
type condLocal struct{ importLocal }

func (l *condLocal) ImportIf(ctx context.Context, name string, data []byte, _ func(archive.Version) bool) (archive.Version, bool, error) {
	return l.Import(ctx, name, data)
}

// TestGated: a gated import holds the Book's import lock, which a purge
// takes exclusively; a store that imports conditionally stays one, its
// ImportIf gated too, and one that does not is not made one.
func TestGated(t *testing.T) {
	ctx := context.Background()
	b := &Book{}
	l := &importLocal{b: b}
	g := b.Gated(l)
	if _, added, err := g.Import(ctx, "x", nil); err != nil || !added {
		t.Fatalf("Import: %v, %v", added, err)
	}
	if !l.held {
		t.Fatal("a gated import ran without the import lock")
	}
	if _, ok := g.(replicate.CondImporter); ok {
		t.Fatal("a store without ImportIf gated into one with it")
	}
	c := &condLocal{importLocal{b: b}}
	gc, ok := b.Gated(c).(replicate.CondImporter)
	if !ok {
		t.Fatal("a gated CondImporter is not one")
	}
	if _, added, err := gc.ImportIf(ctx, "x", nil, func(archive.Version) bool { return true }); err != nil || !added || !c.held {
		t.Fatalf("ImportIf: %v, %v; under the import lock %v", added, err, c.held)
	}
}

// TestNeighbours: predecessor, successors and fingers of each virtual
// server, in that order.
func TestNeighbours(t *testing.T) {
	node := func(p string) ring.Node { return ring.Node{ID: id.OfString(p), Contact: ring.Contact{Peer: p}} }
	pred := node("p")
	st := ring.Status{Vnodes: []ring.VnodeStatus{
		{Predecessor: &pred, Successors: []ring.Node{node("s1"), node("s2")}, Fingers: []ring.Finger{{Node: node("f")}}},
		{Successors: []ring.Node{node("s3")}},
	}}
	var got []string
	for _, c := range Neighbours(st) {
		got = append(got, c.Peer)
	}
	if want := "[p s1 s2 f s3]"; fmt.Sprint(got) != want {
		t.Fatalf("Neighbours = %v, want %s", got, want)
	}
}
