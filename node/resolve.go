package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// resolver is the node seen as the gateway's archive: every URL is answered
// by the node that owns it, this one or another found by lookup.
type resolver Node

var _ gateway.Archive = (*resolver)(nil)

// Versions implements gateway.Archive: the versions of url as the first of
// its holders that has any reports them (see askHolders).
func (r *resolver) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	n := (*Node)(r)
	var out []archive.Version
	err := n.askHolders(ctx, url,
		func(c string) error {
			vs, err := n.store.Versions(ctx, c)
			if err == nil && len(vs) == 0 {
				err = archive.ErrNotFound
			}
			out = vs
			return err
		},
		func(c string, o ring.Contact) error {
			rep, _, err := n.fetchRemote(ctx, o, archiveRequest{Op: "versions", URL: c})
			if err == nil && len(rep.Versions) == 0 {
				err = archive.ErrNotFound
			}
			out = rep.Versions
			return err
		})
	if errors.Is(err, archive.ErrNotFound) {
		return nil, nil
	}
	return out, err
}

// Get implements gateway.Archive: the version of url for time t from the
// first of its holders that has one (see askHolders).
func (r *resolver) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	n := (*Node)(r)
	var (
		v    archive.Version
		capt *archive.Capture
	)
	err := n.askHolders(ctx, url,
		func(c string) (err error) {
			v, capt, err = n.localGet(ctx, c, t)
			return err
		},
		func(c string, o ring.Contact) error {
			rep, cp, err := n.fetchRemote(ctx, o, archiveRequest{Op: "get", URL: c, Time: t})
			v, capt = rep.Version, cp
			return err
		})
	if err != nil {
		return archive.Version{}, nil, err
	}
	return v, capt, nil
}

// maxHolderSteps bounds the ring steps askHolders walks past the owner
// looking for replicas on other real nodes.
const maxHolderSteps = 32

// askHolders asks the holders of url's versions, in order, until one has
// them: the owner; then, when the owner cannot be reached or has nothing
// (it is down, or it has just taken the range over and is not yet synced),
// this node's own store, which holds the versions of the ranges it
// replicates; then the owner's successors on other real nodes, the
// replicas, up to k (Config.Replicas) real nodes in all. local and remote
// ask this node or another; each returns an error wrapping
// archive.ErrNotFound when the holder has nothing. askHolders returns nil
// once one succeeds, an error wrapping archive.ErrNotFound when every
// holder reached had nothing, or the errors met.
func (n *Node) askHolders(ctx context.Context, url string, local func(c string) error, remote func(c string, o ring.Contact) error) error {
	c, err := canon.Canonical(url)
	if err != nil {
		return err
	}
	key := id.OfString(c)
	var errs []error
	asked := map[string]bool{}
	ask := func(o ring.Contact) (bool, error) {
		if asked[o.Peer] {
			return false, nil
		}
		asked[o.Peer] = true
		var err error
		if o.Peer == n.self.Peer {
			err = local(c)
		} else {
			err = remote(c, o)
		}
		if err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if !errors.Is(err, archive.ErrNotFound) {
			errs = append(errs, err)
		}
		return false, nil
	}
	done := func(found bool, err error) (bool, error) { return found || err != nil, err }

	owner, mine := n.ring.OwnerVnode(key)
	var lerr error
	if !mine {
		owner, lerr = n.ring.Lookup(ctx, key)
	}
	if lerr != nil {
		errs = append(errs, fmt.Errorf("lookup owner of %s: %w", c, lerr))
	} else if stop, err := done(ask(owner.Contact)); stop {
		return err
	}
	if stop, err := done(ask(n.self)); stop {
		return err
	}
	if lerr == nil {
		cur := owner
		for step := 0; step < maxHolderSteps && len(asked) < n.cfg.Replicas+1; step++ {
			next, err := n.ring.Lookup(ctx, cur.ID.AddPow2(0))
			if err != nil || next.ID == owner.ID {
				break
			}
			cur = next
			if next.Peer == owner.Peer {
				continue
			}
			if stop, err := done(ask(next.Contact)); stop {
				return err
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return fmt.Errorf("%s: %w", c, archive.ErrNotFound)
}

// localGet returns the newest local version of url not newer than t, or the
// oldest when all are newer, with its capture.
func (n *Node) localGet(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	v, err := n.store.At(ctx, url, t)
	if errors.Is(err, archive.ErrNotFound) {
		vs, verr := n.store.Versions(ctx, url)
		if verr != nil {
			return archive.Version{}, nil, verr
		}
		if len(vs) == 0 {
			return archive.Version{}, nil, archive.ErrNotFound
		}
		v, err = vs[0], nil
	}
	if err != nil {
		return archive.Version{}, nil, err
	}
	c, err := n.store.Read(ctx, v)
	if err != nil {
		return archive.Version{}, nil, err
	}
	return v, c, nil
}

// ownsURL reports whether this node owns the canonical url; the crawler uses
// it to re-queue only its own URLs at the start of a day.
func (n *Node) ownsURL(url string) bool { return n.ring.Owns(id.OfString(url)) }
