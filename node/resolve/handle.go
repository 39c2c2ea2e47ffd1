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
		v, data, err := sv.localRecord(ctx, req.URL, req.Time)
		switch {
		case err == nil && !sv.shown(v): // access.go
			rep.NotFound = true
		case errors.Is(err, archive.ErrNotFound):
			rep.NotFound = true
		case err != nil:
			rep.Error = err.Error()
		default:
			held, ok := sv.budget().Take(ctx, int64(len(data)), true)
			if !ok {
				rep.Error = fmt.Sprintf("busy: replies hold %d bytes", sv.budget().Size())
				break
			}
			defer sv.budget().Release(held) // once the reply is written
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

// localRecord returns the local version of url for t (localVersion) and
// its record as one gzip member, as replication sends it.
func (sv *Service) localRecord(ctx context.Context, url string, t time.Time) (archive.Version, []byte, error) {
	v, err := sv.localVersion(ctx, url, t)
	if err != nil {
		return archive.Version{}, nil, err
	}
	data, err := sv.Store.ReadFile(ctx, v.Entry())
	if err != nil {
		return archive.Version{}, nil, err
	}
	return v, data, nil
}
