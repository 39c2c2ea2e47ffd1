package archive

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestHasVersions: the batch answers as HasVersion does for every URL,
// in any order and with repeats, whether the next stored URL lies a few
// entries on (stepped to) or far (sought), on one host or many, with
// URLs before, between and after the stored ones.
func TestHasVersions(t *testing.T) {
	s := openTest(t, Options{DictSamples: -1})
	var all []string
	for h := range 5 {
		for i := range 60 {
			u := fmt.Sprintf("http://h%d.example/p%03d", h, i)
			all = append(all, u)
			if i%3 == 0 || (h == 2 && i < 40) { // runs of stored URLs and gaps
				mustPut(t, s, capture(u, t0, "body "+u))
			}
		}
	}
	all = append(all, "http://a.example/", "http://zz.example/", "http://h1.example/", "http://h1.example/p999")
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 4 {
		batch := append([]string(nil), all...)
		if round > 0 {
			batch = batch[:rng.IntN(len(batch))+1]
			batch = append(batch, batch[:len(batch)/3]...) // repeats
			rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		}
		got, err := s.HasVersions(batch)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(batch) {
			t.Fatalf("round %d: %d answers for %d URLs", round, len(got), len(batch))
		}
		stored := 0
		for i, u := range batch {
			want, err := s.HasVersion(u)
			if err != nil {
				t.Fatal(err)
			}
			if got[i] != want {
				t.Errorf("round %d: %s: HasVersions says %v, HasVersion %v", round, u, got[i], want)
			}
			if want {
				stored++
			}
		}
		if round == 0 && (stored == 0 || stored == len(batch)) {
			t.Fatalf("round 0: %d of %d stored: the test needs both", stored, len(batch))
		}
	}
	if got, err := s.HasVersions(nil); err != nil || len(got) != 0 {
		t.Errorf("no URLs: %v, %v", got, err)
	}
}
