package resolve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Protocol answers "versions of u" and "the capture of u at t" for URLs a
// node stores: one JSON Request, one JSON Reply and, for a capture, its
// body in a second frame.
const Protocol protocol.ID = "/herod/archive/1.0.0"

// Limits of the protocol, the node's for every protocol: a hostile peer
// cannot make a node buffer more than these.
const (
	maxRequestFrame = 64 << 10
	maxHeaderFrame  = 4 << 20
	maxBodyFrame    = 64 << 20
	streamTimeout   = 30 * time.Second
)

// errRemote reports an error the remote node returned.
var errRemote = errors.New("node: remote error")

// Ring is what a Service needs of the ring; *ring.Ring implements it.
type Ring interface {
	// OwnerVnode returns the local virtual server that owns key, if one
	// does by this node's view.
	OwnerVnode(key id.ID) (ring.Node, bool)
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
}

// Service is a node seen as the gateway's archive (Versions, Get): every
// URL is answered by its holders, the node that owns it, this one or
// another found by lookup, or a replica; and the server side of Protocol
// (Handle). Every field but BadFrame and Logger must be set.
type Service struct {
	Store *archive.Store
	Self  ring.Contact // this node: asked through Store, not the network
	Ring  Ring
	K     int // the replication factor: holders asked at most
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	// Gate admits a stream from a verified ring member; a stream from
	// another peer it resets and returns false.
	Gate func(s network.Stream) bool
	// Base is the context requests are served under: the node's, which
	// ends when it closes.
	Base       func() context.Context
	wire.Hooks // BadFrame and Logger, both optional
}

// Request asks the owner of URL for its versions or for one capture.
type Request struct {
	Op   string    `json:"op"` // "versions", "get" or "checks"
	URL  string    `json:"url"`
	Time time.Time `json:"time,omitzero"`
}

// Reply answers an Request. For "get" the payload follows in a
// second frame.
type Reply struct {
	NotFound bool              `json:"notFound,omitempty"`
	Error    string            `json:"error,omitempty"`
	Versions []archive.Version `json:"versions,omitempty"`
	Version  archive.Version   `json:"version,omitzero"`
	Capture  *captureHeader    `json:"capture,omitempty"`
	Checks   []time.Time       `json:"checks,omitempty"` // for "checks"
}

// captureHeader is a capture without its body, which follows in a frame
// of its own.
type captureHeader struct {
	URL    string              `json:"url"`
	Time   time.Time           `json:"time"`
	Status int                 `json:"status"`
	Header map[string][]string `json:"header"`
}

var _ gateway.Archive = (*Service)(nil)

// Versions implements gateway.Archive: the versions of url as the first of
// its holders that has any reports them (see askHolders).
func (sv *Service) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	var out []archive.Version
	err := sv.askHolders(ctx, url,
		func(c string) error {
			vs, err := sv.Store.Versions(ctx, c)
			if err == nil && len(vs) == 0 {
				err = archive.ErrNotFound
			}
			out = vs
			return err
		},
		func(c string, o ring.Contact) error {
			rep, _, err := sv.fetchRemote(ctx, o, Request{Op: "versions", URL: c})
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
func (sv *Service) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	var (
		v    archive.Version
		capt *archive.Capture
	)
	err := sv.askHolders(ctx, url,
		func(c string) (err error) {
			v, capt, err = sv.localGet(ctx, c, t)
			return err
		},
		func(c string, o ring.Contact) error {
			rep, cp, err := sv.fetchRemote(ctx, o, Request{Op: "get", URL: c, Time: t})
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
// replicas, up to K real nodes in all. local and remote
// ask this node or another; each returns an error wrapping
// archive.ErrNotFound when the holder has nothing. askHolders returns nil
// once one succeeds, an error wrapping archive.ErrNotFound when every
// holder reached had nothing, or the errors met.
func (sv *Service) askHolders(ctx context.Context, url string, local func(c string) error, remote func(c string, o ring.Contact) error) error {
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
		if o.Peer == sv.Self.Peer {
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

	owner, mine := sv.Ring.OwnerVnode(key)
	var lerr error
	if !mine {
		owner, lerr = sv.Ring.Lookup(ctx, key)
	}
	if lerr != nil {
		errs = append(errs, fmt.Errorf("lookup owner of %s: %w", c, lerr))
	} else if stop, err := done(ask(owner.Contact)); stop {
		return err
	}
	if stop, err := done(ask(sv.Self)); stop {
		return err
	}
	if lerr == nil {
		cur := owner
		for step := 0; step < maxHolderSteps && len(asked) < sv.K+1; step++ {
			next, err := sv.Ring.Lookup(ctx, cur.ID.AddPow2(0))
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
func (sv *Service) localGet(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	v, err := sv.Store.At(ctx, url, t)
	if errors.Is(err, archive.ErrNotFound) {
		vs, verr := sv.Store.Versions(ctx, url)
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
	c, err := sv.Store.Read(ctx, v)
	if err != nil {
		return archive.Version{}, nil, err
	}
	return v, c, nil
}

// fetchRemote asks the real node behind c for the versions of url or, with
// op "get", for the capture of url at t.
func (sv *Service) fetchRemote(ctx context.Context, c ring.Contact, req Request) (Reply, *archive.Capture, error) {
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
		return rep, nil, fmt.Errorf("archive reply: %w: %s", errRemote, rep.Error)
	case rep.Capture == nil:
		return rep, nil, nil
	}
	body, err := wire.ReadFrame(r, maxBodyFrame)
	if err != nil {
		s.Reset()
		return rep, nil, fmt.Errorf("archive reply body: %w", err)
	}
	if got := id.Sum(body); got != rep.Version.Digest {
		return rep, nil, fmt.Errorf("archive reply body: %w: digest %s, want %s", archive.ErrCorrupt, got, rep.Version.Digest)
	}
	return rep, &archive.Capture{
		URL: rep.Capture.URL, Time: rep.Capture.Time, Status: rep.Capture.Status,
		Header: rep.Capture.Header, Body: body,
	}, nil
}

// Handle serves versions and captures of URLs this node stores: the
// stream handler of Protocol.
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
	var body []byte
	switch req.Op {
	case "versions":
		vs, err := sv.Store.Versions(ctx, req.URL)
		if err != nil {
			rep.Error = err.Error()
		}
		rep.Versions = vs
	case "get":
		v, c, err := sv.localGet(ctx, req.URL, req.Time)
		switch {
		case errors.Is(err, archive.ErrNotFound):
			rep.NotFound = true
		case err != nil:
			rep.Error = err.Error()
		default:
			rep.Version = v
			rep.Capture = &captureHeader{URL: c.URL, Time: c.Time, Status: c.Status, Header: c.Header}
			body = c.Body
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
	if rep.Capture != nil {
		if err := wire.WriteFrame(s, body); err != nil {
			s.Reset()
		}
	}
}
