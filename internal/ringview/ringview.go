package ringview

import (
	"fmt"
	"strings"
	"time"
)

// View is what the /ring page shows: the virtual servers this node
// knows of (its own and those it has heard of), and optionally a summary
// per real node.
type View struct {
	Self  string        `json:"self"`            // peer id of this node
	K     int           `json:"k,omitempty"`     // replication factor; 0: not known
	Nodes []Node        `json:"nodes"`           // virtual servers, any order
	Peers []PeerSummary `json:"peers,omitempty"` // per real node, if known
}

// Node is one virtual server.
type Node struct {
	ID          string   `json:"id"`                    // 40 hex digits
	Index       int      `json:"index"`                 // virtual-server index on its real node
	Peer        string   `json:"peer"`                  // real node (libp2p peer id)
	Addr        string   `json:"addr,omitempty"`        // address it was seen at
	Predecessor string   `json:"predecessor,omitempty"` // hex id, "" if unknown
	Successors  []string `json:"successors,omitempty"`  // hex ids, nearest first
	Local       bool     `json:"local"`                 // runs in this process
}

// PeerSummary is the state, crawl and storage summary of one real node.
type PeerSummary struct {
	Peer string `json:"peer"`
	Addr string `json:"addr,omitempty"`
	// State is "up" (it answered), "unreachable" (it did not: down,
	// leaving, or not reachable from this node), "dead" (calls to it
	// failed and the ring dropped it), "departed" (it left the ring) or
	// "" (not asked).
	State string `json:"state,omitempty"`
	// Since is when a dead or departed node was found down (within
	// seconds of its failure or departure).
	Since time.Time `json:"since,omitzero"`
	// Reach is how the ring reaches the node, as it says: "listen" (its
	// own address), "mapped" (behind a router, by UPnP/NAT-PMP),
	// "announced" (behind a router, a port forwarded by hand) or
	// "relayed" (behind a router that maps no port: reached through a
	// circuit relay on a member).
	Reach string `json:"reach,omitempty"`
	// Relayed: this node reaches it only through a circuit relay.
	Relayed bool  `json:"relayed,omitempty"`
	Day     int64 `json:"day"` // its crawl day
	// DayStart is when its crawl day began (Day counts days of its day
	// length since the Unix epoch).
	DayStart time.Time `json:"day_start,omitzero"`
	Queued   int64     `json:"queued"`   // URLs waiting in today's queue
	Fetched  int64     `json:"fetched"`  // fetches today
	Stored   int64     `json:"stored"`   // new versions stored today
	Errors   int64     `json:"errors"`   // failed fetches today
	Versions int64     `json:"versions"` // versions held
	Bytes    int64     `json:"bytes"`    // bytes on disk
	// BelowK counts versions of its ranges lacking a copy on one of their
	// replicas, LagSec its replication lag, at its last round.
	BelowK int64   `json:"below_k"`
	LagSec float64 `json:"lag_sec"`
}

// Up tells whether the node answered.
func (p PeerSummary) Up() bool { return p.State == "up" }

// Health is the headline of the ring's health as one node sees it.
type Health struct {
	Up, Nodes int // real nodes that answered, of those listed
	// BelowK sums the versions each node that answered counts as having
	// fewer than K copies in its own ranges (PeerSummary.BelowK).
	BelowK int64
	K      int
	// TooFew: fewer nodes are up than K, so no version can have K copies.
	TooFew bool
}

// Health returns the headline of v.
func (v View) Health() Health {
	h := Health{K: v.K, Nodes: len(v.Peers)}
	for _, p := range v.Peers {
		if p.Up() {
			h.Up++
			h.BelowK += p.BelowK
		}
	}
	h.TooFew = v.K > 0 && h.Up < v.K
	return h
}

// Headline is the health in one line: "3 of 4 nodes up · 412 versions
// with fewer than k = 3 copies", or, when fewer nodes are up than k,
// "2 of 4 nodes up · every version has fewer than k = 3 copies" (the
// nodes' counts may lag their next replication round).
func (h Health) Headline() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d node%s up · ", h.Up, h.Nodes, plural(h.Nodes))
	if h.TooFew {
		fmt.Fprintf(&b, "every version has fewer than k = %d copies", h.K)
		return b.String()
	}
	fmt.Fprintf(&b, "%d version%s with fewer than ", h.BelowK, plural(int(h.BelowK)))
	if h.K > 0 {
		fmt.Fprintf(&b, "k = %d copies", h.K)
	} else {
		b.WriteString("k copies")
	}
	return b.String()
}

// Warning is what the operator should know when fewer nodes are up than
// k, or "".
func (h Health) Warning() string {
	if !h.TooFew {
		return ""
	}
	return fmt.Sprintf("Only %d node%s up, fewer than k = %d: no version can have %d copies until more nodes join the ring.", h.Up, plural(h.Up), h.K, h.K)
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// NAT tells whether the node sits behind a router (mapped, announced or
// relayed).
func (p PeerSummary) NAT() bool {
	return p.Reach == "mapped" || p.Reach == "announced" || p.Reach == "relayed"
}
