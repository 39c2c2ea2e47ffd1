package ringtest

import (
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/ringcheck"
)

// Vnodes returns every vnode of rs in id order (ringcheck.Vnodes).
func Vnodes(rs []*ring.Ring) []ring.Node { return ringcheck.Vnodes(rs) }

// Owner returns the true successor of key among all, which must be
// sorted by id and non-empty (ringcheck.Owner).
func Owner(all []ring.Node, key id.ID) ring.Node { return ringcheck.Owner(all, key) }

// Linked reports whether every vnode of rs has its true neighbours as
// first successor and predecessor (ringcheck.Linked).
func Linked(rs []*ring.Ring) error { return ringcheck.Linked(rs) }

// Consistent reports whether rs form exactly one correct Chord ring
// (ringcheck.Consistent).
func Consistent(rs []*ring.Ring) error { return ringcheck.Consistent(rs) }
