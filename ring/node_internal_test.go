package ring

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/herod-archive/herod/internal/id"
)

func TestTopTowardMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var nodes []Node
		for i := range rng.IntN(40) {
			x := id.OfString(fmt.Sprint(trial, i%17)) // duplicates on purpose
			nodes = append(nodes, Node{ID: x})
		}
		key := id.OfString(fmt.Sprint("key", trial))
		if trial%5 == 0 && len(nodes) > 0 {
			key = nodes[0].ID
		}
		k := 1 + rng.IntN(9)
		want := sortToward(key, nodes)
		if len(want) > k {
			want = want[:k]
		}
		if got := topToward(key, nodes, k, nil); !slices.Equal(got, want) {
			t.Fatalf("trial %d: topToward = %v, want %v", trial, got, want)
		}
	}
}

func TestDist(t *testing.T) {
	var a, b id.ID
	b[id.Size-1] = 5
	a[id.Size-1] = 7
	if d := dist(a, b); d[0] != 0xff || d[id.Size-1] != 0xfe {
		t.Fatalf("dist wraps wrong: %s", d)
	}
	if d := dist(b, a); d != (id.ID{id.Size - 1: 2}) {
		t.Fatalf("dist = %s", d)
	}
}
