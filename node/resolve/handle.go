package resolve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/wire"
)

// Handle serves versions and captures of URLs this node stores: the
// stream handler of Protocol. Versions go with their fetchers'
// signatures (a version whose record cannot be read is left out), a
// capture as its signed record, exactly as the store holds it.
func (sv *Service) Handle(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(streamTimeout))
	if !sv.Gate(s) {
		return
	}
	var req Request
	if err := wire.ReadJSON(bufio.NewReader(s), maxRequestFrame, &req); err != nil {
		sv.CountBadFrame()
		sv.Log().Debug("archive: bad request", "peer", s.Conn().RemotePeer(), "err", err)
		s.Reset()
		return
	}
	ctx, cancel := context.WithTimeout(sv.Base(), streamTimeout)
	defer cancel()
	var rep Reply
	var record []byte
	switch req.Op {
	case "versions":
		vs, err := sv.signedVersions(ctx, req.URL)
		if err != nil {
			rep.Error = err.Error()
		}
		rep.Versions = sv.listed(vs) // access.go
	case "get":
		var held int64
		defer func() { sv.budget().Release(held) }() // once the reply is written
		v, data, err := sv.localRecord(ctx, req.URL, req.Time, &held)
		switch {
		case errors.Is(err, archive.ErrNoRoom):
			rep.Error = fmt.Sprintf("busy: replies hold %d bytes", sv.budget().Size())
		case errors.Is(err, archive.ErrNotFound):
			rep.NotFound = true
		case err != nil:
			rep.Error = err.Error()
		default:
			rep.Version, rep.Record, record = v, true, data
		}
	case "checks":
		cs, err := sv.localChecks(ctx, req.URL)
		switch {
		case errors.Is(err, archive.ErrNotFound):
			rep.NotFound = true
		case err != nil:
			rep.Error = err.Error()
		}
		rep.Checks = cs
	default:
		rep.Error = fmt.Sprintf("unknown op %q", req.Op)
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
		return
	}
	if rep.Record {
		if err := wire.WriteFrame(s, record); err != nil {
			s.Reset()
		}
	}
}

// signedVersions returns the local versions of url, each with its
// fetcher's signature, read from its record's header.
func (sv *Service) signedVersions(ctx context.Context, url string) ([]SignedVersion, error) {
	vs, err := sv.Store.Versions(ctx, url)
	if err != nil {
		return nil, err
	}
	out := make([]SignedVersion, 0, len(vs))
	for _, v := range vs {
		_, sig, err := sv.Store.Provenance(ctx, v)
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			sv.Log().Warn("archive: version left out of a listing", "url", v.URL, "err", err)
			continue
		}
		out = append(out, SignedVersion{Version: v, Signature: sig})
	}
	return out, nil
}

// localRecord returns the local version of url for t (localVersion), if
// the access rules show it (ErrNotFound if not), and its record as one
// gzip member, as replication sends it. Room in the reply budget is
// taken before the record is read (its stored size, waiting until ctx
// ends) and then made its bytes; held counts what was taken, to release
// once the reply is written. Without room it returns archive.ErrNoRoom
// (wrapped), having read nothing.
func (sv *Service) localRecord(ctx context.Context, url string, t time.Time, held *int64) (archive.Version, []byte, error) {
	v, err := sv.localVersion(ctx, url, t)
	if err != nil {
		return archive.Version{}, nil, err
	}
	if !sv.shown(v) { // access.go
		return archive.Version{}, nil, fmt.Errorf("%s: %w", url, archive.ErrNotFound)
	}
	b := sv.budget()
	data, err := sv.Store.ReadFileWithin(ctx, v.Entry(), func(n int64) bool {
		took, ok := b.Take(ctx, n, true)
		*held += took
		return ok
	})
	if err != nil {
		return archive.Version{}, nil, err
	}
	// The gzip member's bytes, not the stored record's (wire.ReplyBudget.Fit).
	var ok bool
	if *held, ok = b.Fit(ctx, *held, int64(len(data)), true); !ok {
		return archive.Version{}, nil, fmt.Errorf("%s: %w", url, archive.ErrNoRoom)
	}
	return v, data, nil
}
