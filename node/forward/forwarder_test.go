package forward

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/ring"
)

var _ crawl.RequisiteForwarder = (*Forwarder)(nil)

// TestForwarderRequisiteFlag: a requisite keeps its kind through the
// outbox and travels in batches of its own; a URL already delivered
// today as a plain link travels again as a requisite, not the reverse.
func TestForwarderRequisiteFlag(t *testing.T) {
	ob, err := OpenOutbox(filepath.Join(t.TempDir(), "outbox"))
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	fr := newFakeRing(1, 1)
	var reqBatches, Batches [][]string
	deliver := func(ctx context.Context, to ring.Node, b Batch) error {
		if b.Requisites {
			reqBatches = append(reqBatches, b.URLs)
		} else {
			Batches = append(Batches, b.URLs)
		}
		return nil
	}
	f, err := New(Config{Ring: fr, Outbox: ob, PerVnode: 1000,
		Deliver: func(ctx context.Context, to ring.Node, b Batch) ([]ring.Node, error) {
			return nil, deliver(ctx, to, b)
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := f.Forward(ctx, []string{"http://a.example/page.html", "http://a.example/x.css?v=1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.ForwardRequisites(ctx, []string{"http://a.example/x.css?v=1", "http://a.example/y.png?v=2"}); err != nil {
		t.Fatal(err)
	}
	stored, err := ob.load()
	if err != nil {
		t.Fatal(err)
	}
	var storedReqs []string
	for _, l := range stored {
		if l.req {
			storedReqs = append(storedReqs, l.url)
		}
	}
	slices.Sort(storedReqs)
	if !slices.Equal(storedReqs, []string{"http://a.example/x.css?v=1", "http://a.example/y.png?v=2"}) {
		t.Fatalf("outbox requisites %q", storedReqs)
	}
	f.flush(ctx)
	if len(Batches) != 1 || len(reqBatches) != 1 || !slices.Equal(Batches[0], []string{"http://a.example/page.html"}) || len(reqBatches[0]) != 2 {
		t.Fatalf("link batches %q, requisite batches %q", Batches, reqBatches)
	}
	// Delivered today: a plain link again is skipped, a requisite of a URL
	// delivered as a plain link travels.
	Batches, reqBatches = nil, nil
	if err := f.Forward(ctx, []string{"http://a.example/x.css?v=1", "http://a.example/page.html"}); err != nil {
		t.Fatal(err)
	}
	if err := f.ForwardRequisites(ctx, []string{"http://a.example/page.html", "http://a.example/y.png?v=2"}); err != nil {
		t.Fatal(err)
	}
	f.flush(ctx)
	if len(Batches) != 0 || len(reqBatches) != 1 || !slices.Equal(reqBatches[0], []string{"http://a.example/page.html"}) {
		t.Fatalf("second round: link batches %q, requisite batches %q", Batches, reqBatches)
	}
}
