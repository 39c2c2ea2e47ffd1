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

// owner returns the contact of the real node owning url, and whether that
// is this node.
func (n *Node) owner(ctx context.Context, url string) (string, ring.Contact, bool, error) {
	c, err := canon.Canonical(url)
	if err != nil {
		return "", ring.Contact{}, false, err
	}
	key := id.OfString(c)
	if n.ring.Owns(key) {
		return c, n.self, true, nil
	}
	o, err := n.ring.Lookup(ctx, key)
	if err != nil {
		return c, ring.Contact{}, false, fmt.Errorf("lookup owner of %s: %w", c, err)
	}
	return c, o.Contact, o.Peer == n.self.Peer, nil
}

// Versions implements gateway.Archive.
func (r *resolver) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	n := (*Node)(r)
	c, o, local, err := n.owner(ctx, url)
	if err != nil {
		return nil, err
	}
	if local {
		return n.store.Versions(ctx, c)
	}
	rep, _, err := n.fetchRemote(ctx, o, archiveRequest{Op: "versions", URL: c})
	if err != nil {
		return nil, err
	}
	return rep.Versions, nil
}

// Get implements gateway.Archive.
func (r *resolver) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	n := (*Node)(r)
	c, o, local, err := n.owner(ctx, url)
	if err != nil {
		return archive.Version{}, nil, err
	}
	if local {
		return n.localGet(ctx, c, t)
	}
	rep, capt, err := n.fetchRemote(ctx, o, archiveRequest{Op: "get", URL: c, Time: t})
	if err != nil {
		return archive.Version{}, nil, err
	}
	return rep.Version, capt, nil
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
