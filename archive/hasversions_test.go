package archive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
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
	all = append(all, sortedMisses...)
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 4 {
		batch := sortedBatch(rng, all, round)
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

// sortedMisses are URLs no test store holds: before, between and after
// the h0…h4.example ones.
var sortedMisses = []string{"http://a.example/", "http://zz.example/", "http://h1.example/", "http://h1.example/p999"}

// sortedBatch is round's batch of all: all of it in order first, then a
// random prefix with a third repeated, shuffled.
func sortedBatch(rng *rand.Rand, all []string, round int) []string {
	batch := append([]string(nil), all...)
	if round > 0 {
		batch = batch[:rng.IntN(len(batch))+1]
		batch = append(batch, batch[:len(batch)/3]...) // repeats
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	}
	return batch
}

// TestStates: the batch returns what State does for every URL, in any
// order and with repeats: states written by SetState and by Put (with
// their Versioned token), none (ErrNotFound), and an unreadable one
// (ErrCorrupt) without failing the rest.
func TestStates(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{DictSamples: -1})
	var all []string
	for h := range 4 {
		for i := range 50 {
			u := fmt.Sprintf("http://h%d.example/p%03d", h, i)
			all = append(all, u)
			switch {
			case i%4 == 0:
				c := capture(u, t0, "body "+u)
				c.State = &CrawlState{ETag: `"x"`, Status: 200, Checked: t0}
				mustPut(t, s, c) // a versioned state
			case i%4 == 1 || (h == 1 && i < 30):
				st := CrawlState{ETag: fmt.Sprintf(`"%d-%d"`, h, i), Status: 200, Checked: t0, Outlinks: []string{u + "/a", u + "/b"}}
				if err := s.SetState(ctx, u, st); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	bad := "http://h2.example/p002"
	if err := s.db.Put(crawlStateKey(bad), []byte{stateBinary, 0xff}, nil); err != nil {
		t.Fatal(err)
	}
	all = append(all, sortedMisses...)
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 4 {
		batch := sortedBatch(rng, all, round)
		sts, errs, err := s.States(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if len(sts) != len(batch) || len(errs) != len(batch) {
			t.Fatalf("round %d: %d states, %d errors for %d URLs", round, len(sts), len(errs), len(batch))
		}
		kinds := map[string]int{}
		for i, u := range batch {
			want, werr := s.State(ctx, u)
			switch {
			case werr == nil && errs[i] == nil:
				kinds["state"]++
				if !reflect.DeepEqual(sts[i], want) {
					t.Errorf("round %d: %s: States %+v, State %+v", round, u, sts[i], want)
				}
				if want.Versioned != 0 {
					kinds["versioned"]++
				}
			case errors.Is(werr, ErrNotFound) && errors.Is(errs[i], ErrNotFound):
				kinds["none"]++
			case errors.Is(werr, ErrCorrupt) && errors.Is(errs[i], ErrCorrupt):
				kinds["corrupt"]++
			default:
				t.Errorf("round %d: %s: States says %v, State %v", round, u, errs[i], werr)
			}
		}
		if round == 0 && (kinds["state"] == 0 || kinds["versioned"] == 0 || kinds["none"] == 0 || kinds["corrupt"] != 1) {
			t.Fatalf("round 0: %v: the test needs every kind", kinds)
		}
	}
	// A purge of another URL moves the token (State's and States' alike).
	before, _ := s.State(ctx, all[4])
	if _, err := s.PurgeURLs(ctx, URLPurge{ID: "p", SURT: Surt(all[0]), Exact: true}); err != nil {
		t.Fatal(err)
	}
	sts, _, err := s.States(ctx, all[4:5])
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := s.State(ctx, all[4]); sts[0].Versioned != want.Versioned || want.Versioned == 0 || want.Versioned == before.Versioned {
		t.Errorf("after a purge: token %d, State's %d (before the purge %d)", sts[0].Versioned, want.Versioned, before.Versioned)
	}
	if sts, errs, err := s.States(ctx, nil); err != nil || len(sts) != 0 || len(errs) != 0 {
		t.Errorf("no URLs: %v, %v, %v", sts, errs, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.States(cctx, all); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}
