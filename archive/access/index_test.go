package access

import (
	"math/rand/v2"
	"testing"
	"time"
)

// reference decides as the package documentation says, scanning every
// rule: the applicable rule with the longest key (exact first), dated
// before undated, the more restrictive action on a tie.
func reference(rules []Rule, key string, t, now time.Time) Action {
	best, bestLen := -1, -1
	better := func(i int, l int) bool {
		if l != bestLen {
			return l > bestLen
		}
		a, b := rules[i], rules[best]
		if a.dated() != b.dated() {
			return a.dated()
		}
		return a.Action.rank() > b.Action.rank()
	}
	for i, r := range rules {
		k, _ := r.Key()
		l := -1
		switch {
		case r.Exact && k == key:
			l = 1 << 20
		case !r.Exact && len(k) <= len(key) && key[:len(k)] == k:
			l = len(k)
		}
		if l < 0 || !r.holds(t, now) {
			continue
		}
		if best < 0 || better(i, l) {
			best, bestLen = i, l
		}
	}
	if best < 0 {
		return Allow
	}
	return rules[best].Action
}

// TestIndexMatchesReference compares Set.DecideKey with reference on
// random rule sets over a small alphabet, where keys share long prefixes
// and siblings sort between a key and its prefixes.
func TestIndexMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = "ab,)/"[rng.IntN(5)]
		}
		return string(b)
	}
	actions := []Action{Allow, Block, Exclude, Purge}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for round := range 300 {
		var rules []Rule
		for range 1 + rng.IntN(40) {
			r := Rule{SURT: word(6), Action: actions[rng.IntN(4)]}
			if r.SURT == "" {
				r.SURT = "*"
			}
			switch rng.IntN(4) {
			case 0:
				r.Before = now.AddDate(0, -rng.IntN(24), 0)
			case 1:
				if e := Period(time.Duration(rng.IntN(400)) * 24 * time.Hour); r.Action != Purge { // a purge has none
					r.Embargo = e
				}
			}
			rules = append(rules, r)
		}
		s, bad := NewSet(rules)
		if bad != nil {
			t.Fatal(bad)
		}
		for range 50 {
			key := word(8)
			tm := now.AddDate(0, -rng.IntN(30), 0)
			if got, want := s.DecideKey(key, tm, now).Action, reference(rules, key, tm, now); got != want {
				t.Fatalf("round %d: key %q at %s: %s, want %s; rules %+v", round, key, tm.Format("2006-01"), got, want, rules)
			}
		}
	}
}
