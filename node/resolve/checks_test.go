package resolve

import (
	"context"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

// TestAskOwnerChecks: the checks that found a URL unchanged come from its
// owner over Protocol; a URL nobody holds has none and no error.
func TestAskOwnerChecks(t *testing.T) {
	ctx := context.Background()
	a, b := pair(t, nil, []string{"http://h.example/a"})
	checked := []time.Time{t0.Add(48 * time.Hour), t0.Add(72 * time.Hour)}
	for _, c := range checked {
		if err := b.Store.(*archive.Store).Touch(ctx, "http://h.example/a", c); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := a.Checks(ctx, "http://h.example/a")
	if err != nil || len(cs) != 2 || !cs[0].Equal(checked[0]) || !cs[1].Equal(checked[1]) {
		t.Fatalf("checks from the owner: %v, %v; want %v", cs, err, checked)
	}
	if cs, err := a.Checks(ctx, "http://h.example/none"); err != nil || cs != nil {
		t.Fatalf("checks of an unknown URL: %v, %v", cs, err)
	}
}
