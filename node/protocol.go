package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// Protocol ids of the node-to-node services. The ring protocol itself lives
// in ring/p2p.
const (
	linksProtocol               = forward.Protocol
	archiveProtocol protocol.ID = "/herod/archive/1.0.0"
)

// Frame limits: a hostile peer cannot make a node buffer more than these.
const (
	maxRequestFrame = 64 << 10
	maxHeaderFrame  = 4 << 20
	maxBodyFrame    = 64 << 20
	streamTimeout   = 30 * time.Second
	// maxHops bounds how often a batch of links is passed on by nodes that
	// do not own them (while the ring is still settling) before the last
	// recipient keeps them anyway rather than lose them.
	maxHops = 4
)

// archiveRequest asks the owner of URL for its versions or for one capture.
type archiveRequest struct {
	Op   string    `json:"op"` // "versions" or "get"
	URL  string    `json:"url"`
	Time time.Time `json:"time,omitzero"`
}

// archiveReply answers an archiveRequest. For "get" the payload follows in a
// second frame.
type archiveReply struct {
	NotFound bool              `json:"notFound,omitempty"`
	Error    string            `json:"error,omitempty"`
	Versions []archive.Version `json:"versions,omitempty"`
	Version  archive.Version   `json:"version,omitzero"`
	Capture  *captureHeader    `json:"capture,omitempty"`
}

type captureHeader struct {
	URL    string              `json:"url"`
	Time   time.Time           `json:"time"`
	Status int                 `json:"status"`
	Header map[string][]string `json:"header"`
}

// errRemote reports an error the remote node returned.
var errRemote = errors.New("node: remote error")

// addrInfo returns the libp2p address of the real node behind c: its
// ip:port, or the circuit through its relay.
func addrInfo(c ring.Contact) (peer.AddrInfo, error) { return p2p.AddrInfo(c) }

// openStream opens a stream to the real node behind c with a deadline.
func (n *Node) openStream(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error) {
	ai, err := addrInfo(c)
	if err != nil {
		return nil, err
	}
	n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.TempAddrTTL)
	s, err := n.host.NewStream(network.WithAllowLimitedConn(ctx, string(p)), ai.ID, p)
	if err != nil {
		return nil, fmt.Errorf("open %s to %s: %w", p, c.Addr, err)
	}
	dl := time.Now().Add(streamTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	_ = s.SetDeadline(dl)
	return s, nil
}

// fetchRemote asks the real node behind c for the versions of url or, with
// op "get", for the capture of url at t.
func (n *Node) fetchRemote(ctx context.Context, c ring.Contact, req archiveRequest) (archiveReply, *archive.Capture, error) {
	s, err := n.openStream(ctx, c, archiveProtocol)
	if err != nil {
		return archiveReply{}, nil, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, req); err != nil {
		s.Reset()
		return archiveReply{}, nil, fmt.Errorf("archive request: %w", err)
	}
	_ = s.CloseWrite()
	r := bufio.NewReader(s)
	var rep archiveReply
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

// handleArchive serves versions and captures of URLs this node stores.
func (n *Node) handleArchive(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(streamTimeout))
	if _, ok := n.gate(s); !ok {
		return
	}
	var req archiveRequest
	if err := wire.ReadJSON(bufio.NewReader(s), maxRequestFrame, &req); err != nil {
		n.counters.badFrames.Add(1)
		n.log.Debug("archive: bad request", "peer", s.Conn().RemotePeer(), "err", err)
		s.Reset()
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, streamTimeout)
	defer cancel()
	var rep archiveReply
	var body []byte
	switch req.Op {
	case "versions":
		vs, err := n.store.Versions(ctx, req.URL)
		if err != nil {
			rep.Error = err.Error()
		}
		rep.Versions = vs
	case "get":
		v, c, err := n.localGet(ctx, req.URL, req.Time)
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
