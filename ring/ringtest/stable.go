package ringtest

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"fmt"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// ProbeKeys returns keys that exercise the routing of rs: every virtual
// server's id and the key just past it, then random keys spread over the
// circle (the SHA-1 of 0 to random-1).
func ProbeKeys(rs []*ring.Ring, random int) []id.ID {
	var keys []id.ID
	for _, r := range rs {
		for _, vs := range r.Vnodes() {
			v := vs.ID
			keys = append(keys, v, v.AddPow2(0))
		}
	}
	for i := 0; i < random; i++ {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(i))
		keys = append(keys, id.ID(sha1.Sum(b[:])))
	}
	return keys
}

// Stable reports whether rs have converged: they are Consistent, and for
// each of keys every ring's lookup returns the true owning virtual server
// and exactly the ring running it claims the key (Owns). (Peers agreeing
// is not enough: a new virtual server known only to its successor passes
// a peer-level check while walks skip it.) Its errors name rings by their
// address (Self).
func Stable(ctx context.Context, rs []*ring.Ring, keys []id.ID) error {
	if err := Consistent(rs); err != nil {
		return err
	}
	all := Vnodes(rs)
	for _, k := range keys {
		wantV := Owner(all, k)
		for _, r := range rs {
			o, err := r.Lookup(ctx, k)
			if err != nil {
				return fmt.Errorf("lookup %s from %s: %w", k.Short(), r.Self().Addr, err)
			}
			if o.ID != wantV.ID {
				return fmt.Errorf("lookup %s from %s: got %s of %s, want %s of %s", k.Short(), r.Self().Addr, o.ID.Short(), o.Addr, wantV.ID.Short(), wantV.Addr)
			}
			if owns := r.Owns(k); owns != (r.Self().Peer == wantV.Peer) {
				return fmt.Errorf("%s claims %s: %v", r.Self().Addr, k.Short(), owns)
			}
		}
	}
	return nil
}
