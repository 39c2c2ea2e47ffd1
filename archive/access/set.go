package access

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/wire"
)

// Decision is what a Set decides for one capture.
type Decision struct {
	Action Action
	// Rule is the rule that decided; nil when none applied (allow).
	Rule *Rule
}

// Shown reports whether the capture may be replayed and exported.
func (d Decision) Shown() bool { return d.Action == Allow || d.Action == "" }

// Listed reports whether the capture may appear in listings (calendar,
// TimeMap, CDX): shown or blocked.
func (d Decision) Listed() bool { return d.Shown() || d.Action == Block }

// Status is the HTTP status a reader of a capture not shown gets: the
// rule's for block (451 unless 403), 404 for exclude and purge, 200 for
// a capture shown.
func (d Decision) Status() int {
	switch {
	case d.Shown():
		return 200
	case d.Action == Block && d.Rule != nil && d.Rule.Status == 403:
		return 403
	case d.Action == Block:
		return 451
	}
	return 404
}

// Set is an immutable, indexed set of rules. The zero value and nil hold
// none (every capture allowed).
type Set struct {
	exact map[string][]Rule // by whole SURT key
	keys  []string          // sorted distinct prefix keys
	rules [][]Rule          // rules of keys[i], in precedence order
	n     int
}

// NewSet indexes rules; invalid ones are left out and returned in bad
// (by their position in rules).
func NewSet(rules []Rule) (s *Set, bad map[int]error) {
	s = &Set{exact: map[string][]Rule{}}
	byKey := map[string][]Rule{}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			if bad == nil {
				bad = map[int]error{}
			}
			bad[i] = err
			continue
		}
		k, _ := r.Key()
		if r.Exact {
			s.exact[k] = append(s.exact[k], r)
		} else {
			byKey[k] = append(byKey[k], r)
		}
		s.n++
	}
	for k := range byKey {
		s.keys = append(s.keys, k)
	}
	slices.Sort(s.keys)
	s.rules = make([][]Rule, len(s.keys))
	for i, k := range s.keys {
		s.rules[i] = byKey[k]
		slices.SortStableFunc(s.rules[i], precedence)
	}
	for k := range s.exact {
		slices.SortStableFunc(s.exact[k], precedence)
	}
	return s, bad
}

// precedence orders the rules of one key: dated ones first, then the
// more restrictive action first.
func precedence(a, b Rule) int {
	if a.dated() != b.dated() {
		if a.dated() {
			return -1
		}
		return 1
	}
	return cmp.Compare(b.Action.rank(), a.Action.rank())
}

// Len returns the number of rules in s.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Decide returns the decision for the capture of url (canonical or not)
// made at t, with now the time of the decision (embargoes). A URL that
// has no SURT key is allowed.
func (s *Set) Decide(url string, t, now time.Time) Decision {
	if s.Len() == 0 {
		return Decision{Action: Allow}
	}
	key, err := SURT(url)
	if err != nil {
		return Decision{Action: Allow}
	}
	return s.DecideKey(key, t, now)
}

// DecideKey is Decide for a SURT key.
func (s *Set) DecideKey(key string, t, now time.Time) Decision {
	if s.Len() == 0 {
		return Decision{Action: Allow}
	}
	if rs := s.exact[key]; rs != nil {
		if d, ok := first(rs, t, now); ok {
			return d
		}
	}
	// The longest prefix of key among keys is the greatest key <= key if
	// that one is a prefix; if not, every prefix of key in keys is at
	// most as long as their common prefix, so search again below it.
	probe := key
	for {
		i, found := slices.BinarySearch(s.keys, probe)
		if !found {
			i--
		}
		if i < 0 {
			return Decision{Action: Allow}
		}
		k := s.keys[i]
		if strings.HasPrefix(key, k) {
			if d, ok := first(s.rules[i], t, now); ok {
				return d
			}
			if k == "" {
				return Decision{Action: Allow}
			}
			probe = k[:len(k)-1] // shorter prefixes only
			continue
		}
		probe = key[:wire.CommonPrefix(k, key)]
	}
}

// first returns the decision of the first rule of rs that holds for t.
func first(rs []Rule, t, now time.Time) (Decision, bool) {
	for i := range rs {
		if rs[i].holds(t, now) {
			return Decision{Action: rs[i].Action, Rule: &rs[i]}, true
		}
	}
	return Decision{}, false
}
