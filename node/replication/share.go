package replication

import (
	"sync"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/replicate"
)

// maxRefusedShare bounds the records remembered as refused for their
// signer's share of the quota (45 bytes each): past it the set starts
// over, and a record is read once more before it is remembered again.
const maxRefusedShare = 100_000

// refusedSet remembers the records the local store refused because their
// signer took its share of the quota (archive.ErrSignerShare), so that
// rounds and offers do not download them again and again: one member's
// junk costs its replicas one download, not one per round.
type refusedSet struct {
	mu sync.Mutex
	m  map[archive.Entry]struct{}
}

func (s *refusedSet) has(e archive.Entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[e]
	return ok
}

func (s *refusedSet) add(e archive.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxRefusedShare {
		s.m = make(map[archive.Entry]struct{})
	}
	s.m[e] = struct{}{}
}

func (s *refusedSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// syncOptions are the options of every sync and copy: skip what the store
// refused for its signer's share, and remember what it refuses.
func (r *Replicator) syncOptions() replicate.Options {
	return replicate.Options{Skip: r.refused.has, Refused: r.refused.add}
}
