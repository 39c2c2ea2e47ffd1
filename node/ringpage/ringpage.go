package ringpage

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/ringview"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// Protocol carries one node's summary for another's /ring page: the
// asker opens a stream and reads one length-prefixed JSON frame
// (ringview.PeerSummary). Only verified ring members may ask.
const Protocol protocol.ID = "/herod/summary/1.0.0"

const (
	// maxSummary bounds a summary frame.
	maxSummary = 16 << 10
	// summaryTimeout bounds the wait for one node's summary; a node that
	// does not answer in time shows as unreachable.
	summaryTimeout = 3 * time.Second
	// summaryFanout bounds the summaries asked at once.
	summaryFanout = 16
)

// Service draws a node's /ring page (View) and answers other nodes'
// requests for its summary (Serve). Every field but Logger must be set.
type Service struct {
	// Status returns the ring as this node sees it (ring.Ring.Status).
	Status func() ring.Status
	// Summary returns this node's own summary.
	Summary func() ringview.PeerSummary
	// Host is this node's libp2p host: it tells whether the connections
	// to a peer are relayed.
	Host host.Host
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open   func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	Logger *slog.Logger // nil: discard
	// K is the ring's replication factor, which the page counts copies
	// against.
	K int
	// Clock tells the time of observations (nil: time.Now); Keep is how
	// long a dead or departed node stays listed (0: DefaultKeep).
	Clock func() time.Time
	Keep  time.Duration
	// Path, when set, is the file that keeps the dead and departed nodes
	// across restarts (JSON, rewritten when they change).
	Path string

	mem members // nodes known, up and down (members.go)
}

func (sv *Service) log() *slog.Logger {
	if sv.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return sv.Logger
}

// Spec declares the summary protocol to the node's kit, which admits
// members only: the asker sends nothing.
func (sv *Service) Spec() kit.Spec {
	return kit.Spec{ID: Protocol, Handle: sv.Serve, MaxFrame: 1, MaxRequest: 1, Deadline: summaryTimeout}
}

// Serve answers a member's request for this node's summary: the handler
// of Protocol.
func (sv *Service) Serve(_ context.Context, q *kit.Request) error {
	b, err := json.Marshal(sv.Summary())
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return wire.WriteFrame(q.Stream(), b)
}

// View is what the gateway's /ring page draws (gateway.Config.Ring):
// this node's virtual servers with their routing state, and every other
// virtual server they know of through successor lists, predecessors and
// fingers, and a summary of every real node among them, asked over
// Protocol.
func (sv *Service) View(ctx context.Context) ringview.View {
	sv.Observe()
	st := sv.Status()
	view := ringview.View{Self: st.Self.Peer, K: sv.K}
	seen := map[string]bool{}
	add := func(x ring.Node) {
		k := x.ID.String()
		if seen[k] {
			return
		}
		seen[k] = true
		view.Nodes = append(view.Nodes, ringview.Node{
			ID: k, Index: x.Index, Peer: x.Peer, Addr: x.Addr, Local: x.Peer == st.Self.Peer,
		})
	}
	for _, v := range st.Vnodes {
		rn := ringview.Node{ID: v.ID.String(), Index: v.Index, Peer: v.Peer, Addr: v.Addr, Local: true}
		if v.Predecessor != nil {
			rn.Predecessor = v.Predecessor.ID.String()
		}
		for _, s := range v.Successors {
			rn.Successors = append(rn.Successors, s.ID.String())
		}
		seen[rn.ID] = true
		view.Nodes = append(view.Nodes, rn)
	}
	for _, v := range st.Vnodes {
		if v.Predecessor != nil {
			add(*v.Predecessor)
		}
		for _, s := range v.Successors {
			add(s)
		}
		for _, f := range v.Fingers {
			add(f.Node)
		}
	}
	// Every real node met above, asked for its summary.
	var others []ring.Contact
	for _, x := range view.Nodes {
		if !x.Local && x.Addr != "" {
			others = append(others, ring.Contact{Peer: x.Peer, Addr: x.Addr})
		}
	}
	view.Peers = sv.withDown(sv.summaries(ctx, sv.Summary(), others))
	return view
}

// withDown marks the peers of ps that did not answer and that this node
// suspects as dead, and adds the dead and departed nodes it remembers
// that ps lacks, with when they were last seen up.
func (sv *Service) withDown(ps []ringview.PeerSummary) []ringview.PeerSummary {
	mem := map[string]Member{}
	for _, m := range sv.Members() {
		mem[m.Peer] = m
	}
	listed := map[string]bool{}
	for i := range ps {
		listed[ps[i].Peer] = true
		if m, ok := mem[ps[i].Peer]; ok && ps[i].State == "unreachable" && m.State == StateDead {
			ps[i].State, ps[i].Since = StateDead, m.Since
		}
	}
	for _, m := range sv.Members() {
		if !listed[m.Peer] && m.State != StateUp {
			ps = append(ps, ringview.PeerSummary{Peer: m.Peer, Addr: m.Addr, State: m.State, Since: m.Since})
		}
	}
	return ps
}

// askSummary reads c's summary.
func (sv *Service) askSummary(ctx context.Context, c ring.Contact) (ringview.PeerSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	s, err := sv.Open(ctx, c, Protocol)
	if err != nil {
		return ringview.PeerSummary{}, err
	}
	defer s.Close()
	_ = s.CloseWrite()
	b, err := wire.ReadFrame(bufio.NewReader(s), maxSummary)
	if err != nil {
		s.Reset()
		return ringview.PeerSummary{}, fmt.Errorf("summary of %s: %w", c.Addr, err)
	}
	var sum ringview.PeerSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		return ringview.PeerSummary{}, fmt.Errorf("summary of %s: %w", c.Addr, err)
	}
	if sum.Peer != c.Peer {
		return ringview.PeerSummary{}, fmt.Errorf("summary of %s: names peer %s", c.Addr, sum.Peer)
	}
	sum.Addr, sum.State = c.Addr, "up"
	return sum, nil
}

// summaries returns self, this node's summary, and the summaries of every
// other node of others (by peer), asked at once; a node that does not
// answer is "unreachable". Each says whether this node's connections to
// it are all relayed.
func (sv *Service) summaries(ctx context.Context, self ringview.PeerSummary, others []ring.Contact) []ringview.PeerSummary {
	out := []ringview.PeerSummary{self}
	seen := map[string]bool{self.Peer: true}
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
			sum, err := sv.askSummary(ctx, c)
			if err != nil {
				sv.log().Debug("ring page: no summary", "peer", c.Peer, "addr", c.Addr, "err", err)
				sum = ringview.PeerSummary{Peer: c.Peer, Addr: c.Addr, State: "unreachable"}
			}
			sum.Relayed = sv.relayed(c.Peer)
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
func (sv *Service) relayed(p string) bool {
	id, err := peer.Decode(p)
	if err != nil {
		return false
	}
	conns := sv.Host.Network().ConnsToPeer(id)
	for _, c := range conns {
		if !c.Stat().Limited && !isCircuit(c.RemoteMultiaddr().String()) {
			return false
		}
	}
	return len(conns) > 0
}

// isCircuit reports whether a multiaddr goes through a circuit relay.
func isCircuit(addr string) bool { return strings.Contains(addr, "/p2p-circuit") }
