package politeness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// RobotsProtocol asks the node that owns origin+"/robots.txt" for the
// record it fetched. One request frame (maxRobotsRequest), one reply frame
// (maxRobotsFrame: the body is at most crawl.RobotsMaxBytes, base64 in
// JSON).
const RobotsProtocol protocol.ID = "/herod/robots/1.0.0"

const (
	maxRobotsRequest = 4 << 10
	maxRobotsFrame   = 1 << 20
	// robotsTimeout bounds asking the owner, which may have to fetch the
	// file first (a request timeout plus a wait for a budget slot).
	robotsTimeout = 60 * time.Second
)

// RobotsRequest asks for origin's robots.txt record. Second asks the
// node as the second holder of the record (the first successor of the
// owner on another real node), which confirms the owner's answer.
type RobotsRequest struct {
	Origin string `json:"origin"`
	Second bool   `json:"second,omitempty"`
}

type RobotsReply struct {
	Record crawl.RobotsRecord `json:"record"`
	Error  string             `json:"error,omitempty"`
}

// errRobotsNotOwned answers a request for an origin whose robots.txt this
// node does not own: the asker's view of the ring is stale, or the asker
// wants this node to fetch for it what the ring gave to another.
var errRobotsNotOwned = errors.New("politeness: robots.txt not owned here")

// RobotsKey returns the ring key of origin's robots.txt: the key of its
// canonical URL.
func RobotsKey(origin string) (id.ID, error) {
	return canon.Key(origin + "/robots.txt")
}

// Robots implements crawl.RobotsSource: the record comes from the node
// owning origin's robots.txt URL, confirmed by its second holder, or from
// this node's crawler when it is the owner, when the owner fails, or when
// the owner's answer is not confirmed (see the package comment).
func (p *Service) Robots(ctx context.Context, origin string) (crawl.RobotsRecord, error) {
	key, err := RobotsKey(origin)
	if err != nil {
		return crawl.RobotsRecord{}, fmt.Errorf("robots %s: %w", origin, err)
	}
	c, self, err := p.owner(ctx, key, false)
	if err == nil && self {
		p.c.robotsLocal.Add(1)
		return p.localRobots(ctx, origin)
	}
	if err == nil {
		p.c.robotsAsked.Add(1)
		var rec crawl.RobotsRecord
		if rec, err = p.askRobots(ctx, c, origin, false); err == nil {
			if why := p.confirm(ctx, key, c, origin, rec); why != nil {
				if ctx.Err() != nil {
					return crawl.RobotsRecord{}, fmt.Errorf("robots %s: %w", origin, ctx.Err())
				}
				p.c.robotsUnconfirmed.Add(1)
				p.log.Info("robots: owner's answer not confirmed, fetching directly", "origin", origin, "owner", c.Addr, "why", why)
				return p.localRobots(ctx, origin)
			}
			p.c.robotsConfirmed.Add(1)
			return rec, nil
		}
		p.forgetOwner(key)
		if errors.Is(err, errRobotsNotOwned) {
			p.ring.Disowned(key, c)
		}
	}
	if ctx.Err() != nil {
		return crawl.RobotsRecord{}, fmt.Errorf("robots %s: %w", origin, ctx.Err())
	}
	p.c.robotsFallback.Add(1)
	p.log.Warn("robots: owner failed, fetching locally", "origin", origin, "err", err)
	return p.localRobots(ctx, origin)
}

// confirm asks the second holder of origin's record (the first node after
// owner on the ring that is another real node) for its record and returns
// nil when it means the same policy as rec (crawl.SameRobots); otherwise
// why not: a disagreement, no second holder, this node being the second
// holder (its answer would be its own direct fetch), or one that failed.
func (p *Service) confirm(ctx context.Context, key id.ID, owner ring.Contact, origin string, rec crawl.RobotsRecord) error {
	ctx, cancel := context.WithTimeout(ctx, robotsTimeout)
	defer cancel()
	succs, err := p.ring.Successors(ctx, key, 2)
	if err != nil {
		return fmt.Errorf("second holder: %w", err)
	}
	var second *ring.Node
	for i := range succs {
		if succs[i].Peer != owner.Peer {
			second = &succs[i]
			break
		}
	}
	switch {
	case second == nil:
		return errors.New("no second holder")
	case second.Peer == p.self.Peer:
		return errors.New("this node is the second holder")
	}
	got, err := p.askRobots(ctx, second.Contact, origin, true)
	if err != nil {
		return fmt.Errorf("second holder %s: %w", second.Addr, err)
	}
	if !crawl.SameRobots(rec, got) {
		p.c.robotsDisagree.Add(1)
		return fmt.Errorf("owner (status %d, %d bytes) and second holder %s (status %d, %d bytes) disagree",
			rec.Status, len(rec.Body), second.Addr, got.Status, len(got.Body))
	}
	return nil
}

// localRobots returns the record from this node's crawler, which fetches
// it from the origin at most once per RobotsTTL.
func (p *Service) localRobots(ctx context.Context, origin string) (crawl.RobotsRecord, error) {
	return p.local(ctx, origin)
}

// askRobots asks the node behind c for origin's record.
func (p *Service) askRobots(ctx context.Context, c ring.Contact, origin string, second bool) (crawl.RobotsRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, robotsTimeout)
	defer cancel()
	var rep RobotsReply
	err := p.peers.Exchange(ctx, c, RobotsProtocol, func(s network.Stream, r *bufio.Reader) error {
		if err := wire.WriteJSON(s, RobotsRequest{Origin: origin, Second: second}); err != nil {
			return fmt.Errorf("robots request: %w", err)
		}
		if err := wire.ReadJSON(r, maxRobotsFrame, &rep); err != nil {
			return fmt.Errorf("robots reply: %w", err)
		}
		return nil
	})
	if err != nil {
		return crawl.RobotsRecord{}, err
	}
	if rep.Error == errRobotsNotOwned.Error() {
		return crawl.RobotsRecord{}, fmt.Errorf("robots reply: %w: %w", errRemote, errRobotsNotOwned)
	}
	if rep.Error != "" {
		return crawl.RobotsRecord{}, fmt.Errorf("robots reply: %w: %s", errRemote, rep.Error)
	}
	rec, err := checkRobotsRecord(rep.Record, time.Now())
	if err != nil {
		p.c.badPeers.Add(1)
		return crawl.RobotsRecord{}, err
	}
	return rec, nil
}

// ServeRobots answers a peer's request for a robots.txt record from this
// node's crawler cache, only for an origin whose robots.txt key this node
// owns by its own view (a peer cannot make it fetch anything else: the
// ring assigns each origin's robots.txt to one node), and answering from
// the local cache never asks further, so there are no loops. The fetch
// itself refuses internal addresses (crawl.Config.AllowPrivate).
func (p *Service) ServeRobots(ctx context.Context, q *kit.Request) error {
	var req RobotsRequest
	if err := q.ReadJSON(maxRobotsRequest, &req); err != nil {
		p.c.badPeers.Add(1)
		return err
	}
	return q.Reply(p.answerRobots(ctx, req))
}

// RobotsSpec declares the robots protocol to the node's kit: a session
// protocol (kit.Spec.Session), one request and one reply an exchange.
func (p *Service) RobotsSpec() kit.Spec {
	return kit.Spec{ID: RobotsProtocol, Handle: p.ServeRobots, MaxFrame: maxRobotsRequest,
		Deadline: robotsTimeout, MaxActive: 64, Session: true}
}

// answerRobots is ServeRobots' decision, apart from the stream.
func (p *Service) answerRobots(ctx context.Context, req RobotsRequest) RobotsReply {
	if err := validRobotsOrigin(req.Origin); err != nil {
		p.c.badPeers.Add(1)
		return RobotsReply{Error: err.Error()}
	}
	key, err := RobotsKey(req.Origin)
	if err != nil {
		p.c.badPeers.Add(1)
		return RobotsReply{Error: err.Error()}
	}
	if !p.ring.Owns(key) && !(req.Second && p.holdsSecond(ctx, key)) {
		p.c.robotsNotOwned.Add(1)
		return RobotsReply{Error: errRobotsNotOwned.Error()}
	}
	rec, err := p.localRobots(ctx, req.Origin)
	if err != nil {
		return RobotsReply{Error: err.Error()}
	}
	p.c.robotsServed.Add(1)
	return RobotsReply{Record: rec}
}

// holdsSecond reports whether this node is, by its own view, one of the
// next two real nodes after key's owner: the second holder an asker
// picks, with one node of slack for views that differ while the ring
// changes. Only then does a peer's Second request make it fetch.
func (p *Service) holdsSecond(ctx context.Context, key id.ID) bool {
	succs, err := p.ring.Successors(ctx, key, 3)
	if err != nil {
		return false
	}
	for _, s := range succs[min(1, len(succs)):] {
		if s.Peer == p.self.Peer {
			return true
		}
	}
	return false
}

// validRobotsOrigin accepts "http(s)://host[:port]" in canonical form.
func validRobotsOrigin(origin string) error {
	if len(origin) > canon.MaxLen {
		return fmt.Errorf("robots origin: %d bytes", len(origin))
	}
	u, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("robots origin: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Scheme+"://"+u.Host != origin {
		return fmt.Errorf("robots origin %q: not scheme://host", origin)
	}
	return nil
}

// checkRobotsRecord checks a record received from a peer: a status that is 0
// or an HTTP status, a body within crawl.RobotsMaxBytes. A fetch time in
// the future (the owner's clock runs ahead) becomes now, so that a skewed
// clock cannot stretch how long the asker trusts the record.
func checkRobotsRecord(rec crawl.RobotsRecord, now time.Time) (crawl.RobotsRecord, error) {
	if rec.Status != 0 && (rec.Status < 100 || rec.Status > 599) {
		return rec, fmt.Errorf("robots reply: status %d", rec.Status)
	}
	if len(rec.Body) > crawl.RobotsMaxBytes {
		return rec, fmt.Errorf("robots reply: body of %d bytes", len(rec.Body))
	}
	if rec.Fetched.IsZero() || rec.Fetched.After(now) {
		rec.Fetched = now
	}
	return rec, nil
}
