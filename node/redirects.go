package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// redirectProtocol delivers one redirect target with its redirect depth
// to the node that owns it (crawl.RedirectSender): one request frame
// (redirectRequest), one reply frame (redirectReply). Links travel in
// batches through package forward; redirect targets are few and need
// their depth to bound a chain across nodes (crawl/redirect.go).
const redirectProtocol protocol.ID = "/herod/redirect/1.0.0"

const (
	maxRedirectRequest = canon.MaxLen + 256
	maxRedirectReply   = 1 << 10
	redirectTimeout    = 10 * time.Second
)

type redirectRequest struct {
	URL   string `json:"url"`
	Depth int    `json:"depth"`
	Req   bool   `json:"req,omitempty"`
	// Replica asks the node to crawl the target as one of the
	// LinkReplicas-1 real nodes after its owner (Config.LinkReplicas).
	Replica bool `json:"replica,omitempty"`
}

type redirectReply struct {
	Error string `json:"error,omitempty"`
}

// errNotOwner answers a redirect target this node does not own.
var errNotOwner = errors.New("node: redirect target not owned here")

// redirectSender is the crawler's crawl.RedirectSender: a target goes to
// its owner over redirectProtocol (to this node's own crawler when it is
// the owner) and, with Config.LinkReplicas > 1, to the next real nodes,
// which crawl links too. An error from the owner leaves the target
// undelivered: the crawler keeps the redirect's old crawl state, so the
// next day's fetch sends it again (a target is never passed on without
// its depth). A replica that fails is only logged, as a walk's replica
// delivery is.
type redirectSender struct{ n *Node }

var _ crawl.RedirectSender = redirectSender{}

// SendRedirect implements crawl.RedirectSender.
func (r redirectSender) SendRedirect(ctx context.Context, target string, depth int, req bool) error {
	n := r.n
	k := max(n.cfg.LinkReplicas, 1)
	if k == 1 && n.ownsURL(target) {
		return n.addRedirect(ctx, target, depth, req)
	}
	ctx, cancel := context.WithTimeout(ctx, redirectTimeout)
	defer cancel()
	succs, err := n.ring.Successors(ctx, id.OfString(target), k)
	if err != nil && len(succs) == 0 {
		return fmt.Errorf("redirect target owner: %w", err)
	}
	rq := redirectRequest{URL: target, Depth: depth, Req: req}
	if err := n.sendRedirect(ctx, succs[0], rq); err != nil {
		return err
	}
	rq.Replica = true
	for _, s := range succs[1:] {
		if err := n.sendRedirect(ctx, s, rq); err != nil {
			n.log.Debug("redirect: replica delivery failed", "url", target, "to", s.Addr, "err", err)
		}
	}
	return nil
}

// sendRedirect delivers rq to node to (this node's crawler when to is
// this node).
func (n *Node) sendRedirect(ctx context.Context, to ring.Node, rq redirectRequest) error {
	if to.Peer == n.self.Peer {
		return n.addRedirect(ctx, rq.URL, rq.Depth, rq.Req)
	}
	s, err := n.openStream(ctx, to.Contact, redirectProtocol)
	if err != nil {
		return err
	}
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	if err := wire.WriteJSON(s, rq); err != nil {
		s.Reset()
		return fmt.Errorf("redirect request: %w", err)
	}
	_ = s.CloseWrite()
	var rep redirectReply
	if err := wire.ReadJSON(bufio.NewReader(s), maxRedirectReply, &rep); err != nil {
		s.Reset()
		return fmt.Errorf("redirect reply: %w", err)
	}
	if rep.Error != "" {
		return fmt.Errorf("redirect reply from %s: %s", to.Addr, rep.Error)
	}
	return nil
}

// addRedirect queues a redirect target at this node's crawler.
func (n *Node) addRedirect(ctx context.Context, target string, depth int, req bool) error {
	if n.crawler == nil {
		return errNotCrawling
	}
	return n.crawler.AddRedirect(ctx, target, depth, req)
}

// handleRedirect queues a member's redirect target when this node owns it.
func (n *Node) handleRedirect(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(redirectTimeout))
	if _, ok := n.gate(s); !ok {
		return
	}
	var req redirectRequest
	if err := wire.ReadJSON(bufio.NewReader(s), maxRedirectRequest, &req); err != nil {
		n.badFrame()
		s.Reset()
		return
	}
	if !n.started.Load() {
		_ = wire.WriteJSON(s, redirectReply{Error: errNotCrawling.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, redirectTimeout)
	defer cancel()
	_ = wire.WriteJSON(s, n.answerRedirect(ctx, req))
}

// answerRedirect is handleRedirect's decision, apart from the stream.
func (n *Node) answerRedirect(ctx context.Context, req redirectRequest) redirectReply {
	u, err := canon.Canonical(req.URL)
	if err != nil || u != req.URL || req.Depth < 1 {
		n.badFrame()
		return redirectReply{Error: fmt.Sprintf("bad redirect target %q at depth %d", req.URL, req.Depth)}
	}
	if !n.ownsURL(u) && !(req.Replica && n.linkReplicaOf(ctx, u)) {
		return redirectReply{Error: errNotOwner.Error()}
	}
	if err := n.addRedirect(ctx, u, req.Depth, req.Req); err != nil {
		return redirectReply{Error: err.Error()}
	}
	return redirectReply{}
}

// linkReplicaOf reports whether, by this node's view, it is one of the
// LinkReplicas-1 real nodes after the owner of url, with one node of
// slack for views that differ while the ring changes.
func (n *Node) linkReplicaOf(ctx context.Context, url string) bool {
	k := n.cfg.LinkReplicas
	if k <= 1 {
		return false
	}
	succs, err := n.ring.Successors(ctx, id.OfString(url), k+1)
	if err != nil {
		return false
	}
	for _, s := range succs[min(1, len(succs)):] {
		if s.Peer == n.self.Peer {
			return true
		}
	}
	return false
}
