package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// summaryProtocol carries one node's summary for another's /ring page:
// the asker opens a stream and reads one length-prefixed JSON frame
// (gateway.PeerSummary). Only verified ring members may ask.
const summaryProtocol protocol.ID = "/herod/summary/1.0.0"

const (
	// maxSummary bounds a summary frame.
	maxSummary = 16 << 10
	// summaryTimeout bounds the wait for one node's summary; a node that
	// does not answer in time shows as unreachable.
	summaryTimeout = 3 * time.Second
	// summaryFanout bounds the summaries asked at once.
	summaryFanout = 16
)

// summary returns this node's own summary.
func (n *Node) summary() gateway.PeerSummary {
	cs, as, rs := n.crawler.Stats(), n.store.Stats(), n.ReplicationStats()
	var errs int64
	for _, e := range cs.ErrorsByKind {
		errs += e
	}
	return gateway.PeerSummary{
		Peer: n.self.Peer, Addr: n.self.Addr, State: "up", Reach: n.reach,
		Day: cs.Day, Queued: int64(cs.Queued), Fetched: cs.FetchedToday, Stored: cs.NewVersions, Errors: errs,
		Versions: as.Versions, Bytes: as.Bytes, BelowK: rs.Health.BelowK, LagSec: rs.Health.LagSec,
	}
}

// handleSummary answers a member's request for this node's summary.
func (n *Node) handleSummary(s network.Stream) {
	defer s.Close()
	if _, ok := n.gate(s); !ok {
		return
	}
	_ = s.SetDeadline(time.Now().Add(summaryTimeout))
	b, err := json.Marshal(n.summary())
	if err != nil {
		s.Reset()
		return
	}
	if err := wire.WriteFrame(s, b); err != nil {
		s.Reset()
	}
}

// askSummary reads c's summary.
func (n *Node) askSummary(ctx context.Context, c ring.Contact) (gateway.PeerSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	s, err := n.openStream(ctx, c, summaryProtocol)
	if err != nil {
		return gateway.PeerSummary{}, err
	}
	defer s.Close()
	_ = s.CloseWrite()
	b, err := wire.ReadFrame(bufio.NewReader(s), maxSummary)
	if err != nil {
		s.Reset()
		return gateway.PeerSummary{}, fmt.Errorf("summary of %s: %w", c.Addr, err)
	}
	var sum gateway.PeerSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		return gateway.PeerSummary{}, fmt.Errorf("summary of %s: %w", c.Addr, err)
	}
	if sum.Peer != c.Peer {
		return gateway.PeerSummary{}, fmt.Errorf("summary of %s: names peer %s", c.Addr, sum.Peer)
	}
	sum.Addr, sum.State = c.Addr, "up"
	return sum, nil
}

// summaries returns the summaries of this node and of every other node
// of others (by peer), asked at once; a node that does not answer is
// "unreachable". Each says whether this node's connections to it are all
// relayed.
func (n *Node) summaries(ctx context.Context, others []ring.Contact) []gateway.PeerSummary {
	out := []gateway.PeerSummary{n.summary()}
	seen := map[string]bool{n.self.Peer: true}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, summaryFanout)
	for _, c := range others {
		if seen[c.Peer] {
			continue
		}
		seen[c.Peer] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sum, err := n.askSummary(ctx, c)
			if err != nil {
				n.log.Debug("ring page: no summary", "peer", c.Peer, "addr", c.Addr, "err", err)
				sum = gateway.PeerSummary{Peer: c.Peer, Addr: c.Addr, State: "unreachable"}
			}
			sum.Relayed = n.relayed(c.Peer)
			mu.Lock()
			out = append(out, sum)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].Addr < out[1+j].Addr })
	return out
}

// relayed reports whether every open connection to peer p goes through a
// circuit relay (none open: false).
func (n *Node) relayed(p string) bool {
	id, err := peer.Decode(p)
	if err != nil {
		return false
	}
	conns := n.host.Network().ConnsToPeer(id)
	for _, c := range conns {
		if !c.Stat().Limited && !isCircuit(c.RemoteMultiaddr().String()) {
			return false
		}
	}
	return len(conns) > 0
}

// isCircuit reports whether a multiaddr goes through a circuit relay.
func isCircuit(addr string) bool { return strings.Contains(addr, "/p2p-circuit") }
