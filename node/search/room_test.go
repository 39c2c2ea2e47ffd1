package search

import (
	"context"
	"errors"
	"testing"

	"github.com/herod-archive/herod/internal/id"
	fts "github.com/herod-archive/herod/search"
)

// TestRoomFor: past MaxPostings a member's add is refused and counted,
// so no member can fill the node's disk with postings.
func TestRoomFor(t *testing.T) {
	st, err := fts.OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sv := &Service{Store: st, MaxPostings: 3}
	if err := sv.roomFor(3); err != nil {
		t.Fatalf("3 postings into an empty store of 3: %v", err)
	}
	ps := []fts.Posting{
		{Term: "war", URL: "http://a.example/", From: 10, To: fts.Open, TF: 1, DocLen: 10},
		{Term: "peace", URL: "http://a.example/", From: 10, To: fts.Open, TF: 1, DocLen: 10},
	}
	for i := range ps {
		ps[i].Key = id.OfString(ps[i].URL)
	}
	if err := st.Put(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	if err := sv.roomFor(2); !errors.Is(err, ErrIndexFull) {
		t.Errorf("2 more into a store holding 2 of 3: %v, want ErrIndexFull", err)
	}
	if err := sv.roomFor(1); err != nil {
		t.Errorf("1 more into a store holding 2 of 3: %v", err)
	}
	if got := sv.Stats().Refused; got != 2 {
		t.Errorf("refused %d postings, want 2", got)
	}
}
