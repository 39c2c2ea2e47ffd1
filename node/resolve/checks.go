package resolve

import (
	"context"
	"errors"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/ring"
)

var _ gateway.Checker = (*Service)(nil)

// Checks implements gateway.Checker: the times url was fetched and found
// unchanged (archive.Store.Checks), as the first of its holders that has
// versions of it reports them: its owner, which crawls it and records
// the checks, first. Replicas hold no checks, so after the owner changes
// the list starts afresh. None (nil, nil) when no holder has the URL.
func (sv *Service) Checks(ctx context.Context, url string) ([]time.Time, error) {
	var out []time.Time
	err := sv.askHolders(ctx, url,
		func(c string) (err error) {
			out, err = sv.localChecks(ctx, c)
			return err
		},
		func(c string, o ring.Contact) error {
			rep, _, err := sv.fetchRemote(ctx, o, Request{Op: "checks", URL: c})
			out = rep.Checks
			return err
		})
	if errors.Is(err, archive.ErrNotFound) {
		return nil, nil
	}
	return out, err
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
