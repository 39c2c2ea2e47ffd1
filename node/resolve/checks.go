package resolve

import (
	"context"
	"errors"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/ring"
)

// Checks implements the gateway's Checker: the times url was fetched and found
// unchanged (archive.Store.Checks), as the first of its holders that has
// versions of it reports them: its owner, which crawls it and records
// the checks, first; this node's own last. Replicas hold no checks, so
// after the owner changes the list starts afresh. Checks carry no
// signature: they only count, and a holder can lie about them. None (nil,
// nil) when no holder has the URL.
func (sv *Service) Checks(ctx context.Context, url string) ([]time.Time, error) {
	if _, mine := sv.Ring.OwnerVnode(id.OfString(url)); mine {
		if cs, err := sv.localChecks(ctx, url); !errors.Is(err, archive.ErrNotFound) {
			return cs, err
		}
	}
	var out []time.Time
	var last error
	found := false
	err := sv.eachHolder(ctx, url, sv.K, func(c ring.Contact) bool {
		rep, _, err := sv.fetchRemote(ctx, c, Request{Op: "checks", URL: url})
		if err != nil {
			if !errors.Is(err, archive.ErrNotFound) {
				last = err
			}
			return true
		}
		out, found = rep.Checks, true
		return false
	})
	if found {
		return out, nil
	}
	cs, lerr := sv.localChecks(ctx, url)
	switch {
	case lerr == nil:
		return cs, nil
	case !errors.Is(lerr, archive.ErrNotFound):
		return nil, lerr
	case err != nil:
		return nil, err
	}
	return nil, last
}

// localChecks returns this node's checks of url, or an error wrapping
// archive.ErrNotFound when it holds no version of url.
func (sv *Service) localChecks(ctx context.Context, url string) ([]time.Time, error) {
	vs, err := sv.Store.Versions(ctx, url)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, archive.ErrNotFound
	}
	return sv.Store.Checks(ctx, url)
}
