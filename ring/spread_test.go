package ring

import (
	"fmt"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

// TestMovesSpread: two twins that move at the same moment see the same
// candidates; each picks its new index by an order of its own among 8,
// so they rarely meet again (a join picks among 2 per virtual server,
// which for one index is a coin toss).
func TestMovesSpread(t *testing.T) {
	var cands []Candidate
	for i := range 16 {
		x := VirtualID("10.0.0.1:4001", i)
		cands = append(cands, Candidate{Index: i, ID: x, Pred: id.OfString(fmt.Sprint("p", i)), Succ: id.OfString(fmt.Sprint("s", i))})
	}
	const pairs = 400
	met, metJoin := 0, 0
	for i := range pairs {
		a, b := fmt.Sprintf("peer-a-%d", i), fmt.Sprintf("peer-b-%d", i)
		if slices.Equal(pickSpreadAmong(cands, 1, 8, a), pickSpreadAmong(cands, 1, 8, b)) {
			met++
		}
		if slices.Equal(pickSpread(cands, 1, a), pickSpread(cands, 1, b)) {
			metJoin++
		}
	}
	t.Logf("moves meeting again: %d of %d (among 8); with a join's spread (among 2): %d", met, pairs, metJoin)
	if met > pairs/5 {
		t.Errorf("moves met again %d of %d times, want about 1 in 8", met, pairs)
	}
}
