package resolve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// errRejected reports what a holder sent that failed verification.
var errRejected = errors.New("resolve: rejected")

// remoteVersions asks holder h for the versions of the canonical url and
// returns those whose signatures verify (Store.VerifySigned: the
// fetcher's key, a peer not purged). The others are counted and left
// out: a version is listed only as its fetcher signed it.
func (sv *Service) remoteVersions(ctx context.Context, url string, h ring.Contact) ([]archive.Version, error) {
	rep, _, err := sv.fetchRemote(ctx, h, Request{Op: "versions", URL: url})
	if err != nil {
		return nil, err
	}
	if len(rep.Versions) == 0 {
		return nil, archive.ErrNotFound
	}
	out := make([]archive.Version, 0, len(rep.Versions))
	var bad int
	var first error
	for _, l := range rep.Versions {
		v := l.Version
		err := sv.Store.VerifySigned(v, l.Signature)
		if err == nil && v.URL != url {
			err = fmt.Errorf("version of %.100q, asked for %.100q", v.URL, url)
		}
		if err != nil {
			bad++
			if first == nil {
				first = err
			}
			continue
		}
		// Where the holder keeps it means nothing here.
		v.File, v.Offset, v.Size = "", 0, 0
		out = mergeVersions(out, []archive.Version{v})
	}
	if bad > 0 {
		sv.rejected.Add(int64(bad))
		sv.Log().Warn("archive: versions failed verification", "peer", h.Peer, "url", url, "rejected", bad, "err", first)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("versions from %s: %w: %d of %d: %w", h.Addr, errRejected, bad, len(rep.Versions), first)
	}
	return out, nil
}

// remoteGet asks holder h for the capture of the canonical url at t and
// returns it once its record verified (Store.VerifyRecord, the check
// replication's imports pass) and proved to be the version h named, of
// url. The version returned is built from the verified record, not taken
// from the reply.
func (sv *Service) remoteGet(ctx context.Context, url string, t time.Time, h ring.Contact) (archive.Version, *archive.Capture, error) {
	rep, data, err := sv.fetchRemote(ctx, h, Request{Op: "get", URL: url, Time: t})
	if err != nil {
		return archive.Version{}, nil, err
	}
	v, c, err := sv.verifyRecord(url, rep.Version, data)
	if err != nil {
		sv.rejected.Add(1)
		sv.Log().Warn("archive: capture failed verification", "peer", h.Peer, "url", url, "err", err)
		return archive.Version{}, nil, fmt.Errorf("capture from %s: %w: %w", h.Addr, errRejected, err)
	}
	return v, c, nil
}

// verifyRecord checks data, the record a holder sent as named's, and
// returns the version it holds and its capture.
func (sv *Service) verifyRecord(url string, named archive.Version, data []byte) (archive.Version, *archive.Capture, error) {
	c, digest, err := sv.Store.VerifyRecord(data)
	if err != nil {
		return archive.Version{}, nil, err
	}
	switch {
	case c.URL != url:
		return archive.Version{}, nil, fmt.Errorf("record of %.100q, asked for %.100q", c.URL, url)
	case digest != named.Digest || !c.Time.Equal(named.Time):
		return archive.Version{}, nil, fmt.Errorf("record of %s at %s, reply names %s at %s", digest, c.Time, named.Digest, named.Time)
	}
	v := archive.Version{
		URL: c.URL, Key: id.OfString(c.URL), Digest: digest, Day: sv.Store.DayOf(c.Time), Time: c.Time,
		Status: c.Status, ContentType: archive.MediaType(c.Header.Get("Content-Type")),
		Length: int64(len(c.Body)), Seq: max(named.Seq, 0), Peer: c.Peer, Browser: c.Browser, Imported: c.Imported,
	}
	return v, c, nil
}

// fetchRemote asks the real node behind c for the versions of url or, with
// op "get", for the record of url at t, which it returns unverified.
func (sv *Service) fetchRemote(ctx context.Context, c ring.Contact, req Request) (Reply, []byte, error) {
	s, err := sv.Open(ctx, c, Protocol)
	if err != nil {
		return Reply{}, nil, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, req); err != nil {
		s.Reset()
		return Reply{}, nil, fmt.Errorf("archive request: %w", err)
	}
	_ = s.CloseWrite()
	r := bufio.NewReader(s)
	var rep Reply
	if err := wire.ReadJSON(r, maxHeaderFrame, &rep); err != nil {
		s.Reset()
		return rep, nil, fmt.Errorf("archive reply: %w", err)
	}
	switch {
	case rep.NotFound:
		return rep, nil, archive.ErrNotFound
	case rep.Error != "":
		return rep, nil, fmt.Errorf("archive reply: %w: %.300s", errRemote, rep.Error)
	case req.Op != "get":
		return rep, nil, nil
	case !rep.Record:
		s.Reset()
		return rep, nil, fmt.Errorf("archive reply: %w: no record", errRejected)
	}
	data, err := wire.ReadFrame(r, maxBodyFrame)
	if err != nil {
		s.Reset()
		return rep, nil, fmt.Errorf("archive reply record: %w", err)
	}
	return rep, data, nil
}
