package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/ring"
)

// crawlDay is the forwarder's Day: the crawler's day now (0 before the
// crawler exists, which is only while the node is being built).
func (n *Node) crawlDay() int64 {
	if n.crawler == nil {
		return 0
	}
	return n.crawler.Today()
}

// deliver hands a batch to the virtual server to and returns to's
// successors: locally when to is one of this node's virtual servers,
// otherwise over the links protocol.
func (n *Node) deliver(ctx context.Context, to ring.Node, b forward.Batch) ([]ring.Node, error) {
	if n.log.Enabled(ctx, slog.LevelDebug) {
		for _, u := range b.URLs {
			n.log.Debug("links: sending", "url", u, "to", to.String(), "hops", b.Hops)
		}
	}
	if to.Peer == n.self.Peer {
		if err := n.receiveLinksKind(ctx, b.URLs, b.Hops, b.Replica, b.Requisites); err != nil {
			return nil, err
		}
		return n.replySuccessorsOf(to.Index, b.Want, b.Next), nil
	}
	s, err := n.openStream(ctx, to.Contact, linksProtocol)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	hdr := forward.Header{VS: to.Index, Hops: b.Hops, Replica: b.Replica, Req: b.Requisites, N: len(b.URLs), Want: b.Want, Next: b.Next}
	if err := wire.WriteJSON(s, hdr); err != nil {
		s.Reset()
		return nil, fmt.Errorf("send links: %w", err)
	}
	if err := wire.WriteFrame(s, forward.EncodeLinks(b.URLs)); err != nil {
		s.Reset()
		return nil, fmt.Errorf("send links: %w", err)
	}
	_ = s.CloseWrite()
	var rep forward.Reply
	if err := wire.ReadJSON(bufio.NewReader(s), forward.MaxReply, &rep); err != nil {
		s.Reset()
		return nil, fmt.Errorf("send links: reply: %w", err)
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("send links: %w: %s", errRemote, rep.Error)
	}
	return rep.Successors, nil
}

// handleLinks receives one hop of another node's ring walk.
func (n *Node) handleLinks(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(streamTimeout))
	m, ok := n.gate(s)
	if !ok {
		return
	}
	r := bufio.NewReader(s)
	var hdr forward.Header
	err := wire.ReadJSON(r, forward.MaxHeader, &hdr)
	var body []byte
	if err == nil {
		body, err = wire.ReadFrame(r, forward.MaxBody)
	}
	var urls []string
	if err == nil {
		urls, err = forward.DecodeLinks(body, hdr.N)
	}
	if err != nil {
		n.counters.badFrames.Add(1)
		n.log.Debug("links: bad request", "peer", s.Conn().RemotePeer(), "err", err)
		s.Reset()
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, streamTimeout)
	defer cancel()
	rep := forward.Reply{Accepted: len(urls)}
	if hdr.Known {
		if err := n.rememberKnown(ctx, urls); err != nil {
			if errors.Is(err, errRole) {
				n.refuseRole(m, string(linksProtocol), err)
			}
			_ = wire.WriteJSON(s, forward.Reply{Error: err.Error()})
			return
		}
		_ = wire.WriteJSON(s, rep)
		return
	}
	if hdr.Replica {
		if err := n.replicaRole(ctx, urls); err != nil {
			if errors.Is(err, errRole) {
				n.refuseRole(m, string(linksProtocol), err)
			}
			_ = wire.WriteJSON(s, forward.Reply{Error: err.Error()})
			return
		}
	}
	if err := n.receiveLinksKind(ctx, urls, hdr.Hops, hdr.Replica, hdr.Req); err != nil {
		rep = forward.Reply{Error: err.Error()}
	} else {
		n.counters.linksReceived.Add(int64(len(urls)))
		rep.Successors = n.replySuccessorsOf(hdr.VS, hdr.Want, hdr.Next)
	}
	_ = wire.WriteJSON(s, rep)
}

// replySuccessorsOf returns the successors the sender of a batch to the
// local virtual server index asked for (forward.Batch.Want).
func (n *Node) replySuccessorsOf(index, want int, next id.ID) []ring.Node {
	if want == forward.WantNone {
		return nil // most batches: no need for the ring's status
	}
	for _, v := range n.ring.Status().Vnodes {
		if v.Index == index {
			return forward.PickSuccessors(v.Node.ID, v.Successors, want, next)
		}
	}
	return nil
}

// receiveLinks takes links delivered to this node: it re-checks each URL,
// queues those this node owns and passes the rest on. Replica links are
// queued as they are: they belong to a predecessor's range. After maxHops
// passes links are queued here rather than risk losing them.
func (n *Node) receiveLinks(ctx context.Context, urls []string, hops int, replica bool) error {
	return n.receiveLinksKind(ctx, urls, hops, replica, false)
}

// receiveLinksKind is receiveLinks for links (req false) or page
// requisites (req true), which are passed on as requisites and queued
// with crawl.Crawler.AddRequisites.
func (n *Node) receiveLinksKind(ctx context.Context, urls []string, hops int, replica, req bool) error {
	var mine, others []string
	closer := map[ring.Node][]string{}
	debug := n.log.Enabled(ctx, slog.LevelDebug)
	for _, u := range urls {
		c, err := canon.Canonical(u)
		if err != nil || c != u {
			n.counters.badLinks.Add(1)
			continue
		}
		if debug {
			n.log.Debug("links: received", "url", c, "hops", hops, "owned", n.ownsURL(c))
		}
		switch {
		case replica || n.ownsURL(c):
			mine = append(mine, c)
		case hops >= maxHops:
			mine = append(mine, c)
			if n.counters.overHops.Add(1) == 1 {
				n.log.Info("a link passed on too often is queued here though this node does not own it; ring views disagree",
					"url", c, "hops", hops)
			}
		default:
			// A lookup led here, so this node's successor-side view is what
			// the sender's routing lacks: a predecessor between the key and
			// the local virtual server is a closer owner (it may have just
			// joined); a walk from here could lead straight back.
			if p, ok := n.ring.CloserOwner(id.OfString(c)); ok {
				closer[p] = append(closer[p], c)
			} else {
				others = append(others, c)
			}
		}
	}
	for p, us := range closer {
		if err := n.fwd.Enqueue(us, hops+1, &p, req); err != nil {
			return err
		}
	}
	if err := n.fwd.Enqueue(others, hops+1, nil, req); err != nil {
		return err
	}
	if req {
		return n.crawler.AddRequisites(ctx, mine)
	}
	return n.crawler.Add(ctx, mine)
}

// replicaRole checks a batch of replica links: this node takes links as a
// replica (Config.LinkReplicas > 1) only for keys whose owner's range it
// replicates, i.e. it is one of the next LinkReplicas-1 distinct real
// nodes after the owner, and every key of the batch lies in that one
// owner's range (a walk hands a replica one owner's run at a time). Two
// ring look-ups per batch: the owner (and its successors) of one key, and
// the owner of the key farthest before it. An error that does not wrap
// errRole means the ring could not tell.
func (n *Node) replicaRole(ctx context.Context, urls []string) error {
	if n.cfg.LinkReplicas <= 1 {
		return fmt.Errorf("%w: this node takes no replica links (LinkReplicas 1)", errRole)
	}
	if len(urls) == 0 {
		return nil
	}
	succs, err := n.ring.Successors(ctx, id.OfString(urls[0]), n.cfg.LinkReplicas)
	if err != nil {
		return fmt.Errorf("replica links: %w", err)
	}
	owner := succs[0]
	mine := false
	for _, s := range succs[1:] {
		mine = mine || s.Peer == n.self.Peer
	}
	if !mine {
		return fmt.Errorf("%w: replica links for %s's range, which this node does not replicate", errRole, owner)
	}
	far, farDist := id.ID{}, new(big.Int)
	o := new(big.Int).SetBytes(owner.ID[:])
	circle := new(big.Int).Lsh(big.NewInt(1), id.Bits)
	for _, u := range urls {
		k := id.OfString(u)
		d := new(big.Int).Sub(o, new(big.Int).SetBytes(k[:]))
		d.Mod(d, circle)
		if d.Cmp(farDist) > 0 {
			far, farDist = k, d
		}
	}
	if farDist.Sign() == 0 {
		return nil // every key is the owner's own id
	}
	got, err := n.ring.Lookup(ctx, far)
	if err != nil {
		return fmt.Errorf("replica links: %w", err)
	}
	if got.ID != owner.ID {
		return fmt.Errorf("%w: replica links span the ranges of %s and %s", errRole, owner, got)
	}
	return nil
}
