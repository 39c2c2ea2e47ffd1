package node

import (
	"bufio"
	"context"
	"fmt"
	"slices"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/ring"
)

// shareKnown implements crawl.KnownSharer: it sends each URL to the real
// nodes that hold its range — its owner and the owner's next
// k-1 (Config.Replicas) distinct real nodes — other than this one, to be
// remembered there (the links protocol with Known set). URLs are grouped
// by owner: one ring look-up and one successor walk per owner, one message
// per holder. The first error stops it; the crawler tries again the next
// day.
func (n *Node) shareKnown(ctx context.Context, urls []string) error {
	type keyed struct {
		key id.ID
		url string
	}
	ks := make([]keyed, len(urls))
	for i, u := range urls {
		ks[i] = keyed{id.OfString(u), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return a.key.Cmp(b.key) })
	for len(ks) > 0 {
		holders, err := n.ring.Successors(ctx, ks[0].key, n.cfg.Replicas)
		if err != nil {
			return fmt.Errorf("share known: %w", err)
		}
		// The owner's range ends at its id: the run of keys up to it is
		// one group (keys sorted clockwise from the first).
		first, owner := ks[0].key, holders[0]
		end := 1
		for end < len(ks) && id.InHalfOpen(ks[end].key, prevKey(first), owner.ID) {
			end++
		}
		group := make([]string, end)
		for i := range group {
			group[i] = ks[i].url
		}
		ks = ks[end:]
		for _, h := range holders {
			if h.Peer == n.self.Peer {
				continue
			}
			if err := n.sendKnown(ctx, h, group); err != nil {
				return fmt.Errorf("share known with %s: %w", h.Addr, err)
			}
			n.counters.knownShared.Add(int64(len(group)))
		}
	}
	return nil
}

// prevKey returns the key just before x on the circle.
func prevKey(x id.ID) id.ID {
	for i := len(x) - 1; i >= 0; i-- {
		x[i]--
		if x[i] != 0xff {
			break
		}
	}
	return x
}

// sendKnown sends one group of known URLs to holder h.
func (n *Node) sendKnown(ctx context.Context, h ring.Node, urls []string) error {
	s, err := n.openStream(ctx, h.Contact, linksProtocol)
	if err != nil {
		return err
	}
	defer s.Close()
	hdr := forward.Header{VS: h.Index, Known: true, N: len(urls), Want: forward.WantNone}
	if err := wire.WriteJSON(s, hdr); err != nil {
		s.Reset()
		return err
	}
	if err := wire.WriteFrame(s, forward.EncodeLinks(urls)); err != nil {
		s.Reset()
		return err
	}
	_ = s.CloseWrite()
	var rep forward.Reply
	if err := wire.ReadJSON(bufio.NewReader(s), forward.MaxReply, &rep); err != nil {
		s.Reset()
		return fmt.Errorf("reply: %w", err)
	}
	if rep.Error != "" {
		return fmt.Errorf("%w: %s", errRemote, rep.Error)
	}
	return nil
}

// rememberKnown takes a batch of known URLs from another member: it
// remembers those whose range this node holds — it owns them or is one of
// the next k-1 (Config.Replicas) distinct real nodes after their owner — so
// that it crawls them once it owns them. The sender groups a batch by
// owner, so one successor walk decides for the batch; a batch for a range
// this node does not hold is refused as outside the sender's role.
func (n *Node) rememberKnown(ctx context.Context, urls []string) error {
	if len(urls) == 0 {
		return nil
	}
	holders, err := n.ring.Successors(ctx, id.OfString(urls[0]), n.cfg.Replicas)
	if err != nil {
		return fmt.Errorf("known links: %w", err)
	}
	if !slices.ContainsFunc(holders, func(h ring.Node) bool { return h.Peer == n.self.Peer }) {
		return fmt.Errorf("%w: known links for %s's range, which this node does not hold", errRole, holders[0])
	}
	if err := n.crawler.Remember(ctx, urls); err != nil {
		return err
	}
	n.counters.knownReceived.Add(int64(len(urls)))
	return nil
}
