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
}

type redirectReply struct {
	Error string `json:"error,omitempty"`
}

// errNotOwner answers a redirect target this node does not own.
var errNotOwner = errors.New("node: redirect target not owned here")

// redirectSender is the crawler's crawl.RedirectSender: a target this
// node owns goes to its own crawler, any other to its owner over
// redirectProtocol. An error leaves the target undelivered: the crawler
// keeps the redirect's old crawl state, so the next day's fetch sends it
// again (a target is never passed on without its depth).
type redirectSender struct{ n *Node }

var _ crawl.RedirectSender = redirectSender{}

// SendRedirect implements crawl.RedirectSender.
func (r redirectSender) SendRedirect(ctx context.Context, target string, depth int, req bool) error {
	n := r.n
	if n.ownsURL(target) {
		return n.addRedirect(ctx, target, depth, req)
	}
	ctx, cancel := context.WithTimeout(ctx, redirectTimeout)
	defer cancel()
	owner, err := n.ring.Lookup(ctx, id.OfString(target))
	if err != nil {
		return fmt.Errorf("redirect target owner: %w", err)
	}
	if owner.Peer == n.self.Peer {
		return n.addRedirect(ctx, target, depth, req)
	}
	s, err := n.openStream(ctx, owner.Contact, redirectProtocol)
	if err != nil {
		return err
	}
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	if err := wire.WriteJSON(s, redirectRequest{URL: target, Depth: depth, Req: req}); err != nil {
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
		return fmt.Errorf("redirect reply from %s: %s", owner.Addr, rep.Error)
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
	if !n.ownsURL(u) {
		return redirectReply{Error: errNotOwner.Error()}
	}
	if err := n.addRedirect(ctx, u, req.Depth, req.Req); err != nil {
		return redirectReply{Error: err.Error()}
	}
	return redirectReply{}
}
