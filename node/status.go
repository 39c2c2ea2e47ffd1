package node

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/cpugate"
	"github.com/herod-archive/herod/ring"
)

// Status is a node's state as /api/status and `herod status` show it.
type Status struct {
	Peer        string           `json:"peer"`
	Addr        string           `json:"addr"`
	Multiaddr   string           `json:"multiaddr"`
	Gateway     string           `json:"gateway"`
	Idle        bool             `json:"idle"`
	Ring        ring.Status      `json:"ring"`
	Crawl       crawl.Stats      `json:"crawl"`
	Archive     archive.Stats    `json:"archive"`
	Forward     ForwardStats     `json:"forward"`
	Links       LinkStats        `json:"links"`
	Politeness  PolitenessStats  `json:"politeness"`
	Replication ReplicationStats `json:"replication"`
	Trust       TrustStats       `json:"trust"`
	// TakenOver counts the URLs queued because a range grew in the middle
	// of a day (a predecessor died or left), since the node started.
	TakenOver int64       `json:"takenOver"`
	Wire      []WireStats `json:"wire"`
	// Processing is the process's CPU gate for page processing (shared by
	// every node the process runs): how often work waited for a slot.
	Processing cpugate.Stats `json:"processing"`
}

// WireStats counts the stream bytes this node sent and received under one
// libp2p protocol ("" is protocol negotiation). Muxer and encryption framing
// are not included.
type WireStats struct {
	Protocol string `json:"protocol"`
	In       int64  `json:"in"`
	Out      int64  `json:"out"`
}

// wire returns the node's stream bytes by protocol, sorted by protocol.
func (n *Node) wire() []WireStats {
	var out []WireStats
	for p, st := range n.bwc.GetBandwidthByProtocol() {
		out = append(out, WireStats{Protocol: string(p), In: st.TotalIn, Out: st.TotalOut})
	}
	slices.SortFunc(out, func(a, b WireStats) int { return strings.Compare(a.Protocol, b.Protocol) })
	return out
}

// LinkStats counts links other nodes sent to this one.
type LinkStats struct {
	Received  int64 `json:"received"`
	BadLinks  int64 `json:"badLinks"`  // not canonical: dropped
	BadFrames int64 `json:"badFrames"` // malformed or oversized messages
	// OverHops counts links queued here, though this node does not own
	// them, because they had been passed on maxHops times: the nodes'
	// views of the ring disagreed, and the owner may fetch them too.
	OverHops int64 `json:"overHops"`
}

// TrustStats counts requests refused at the trust boundary (member.go).
type TrustStats struct {
	// NotMember counts peers refused because they are not verified ring
	// members (each refusal is cached for a few seconds; streams refused
	// from the cache are not counted again).
	NotMember int64 `json:"notMember"`
	// Role counts members' requests outside their role: a pull for a
	// range they do not own or this node does not replicate, replica
	// links for a range this node does not replicate.
	Role int64 `json:"role"`
}

// Status returns a snapshot of the node's state.
func (n *Node) Status() Status {
	return Status{
		Peer:      n.self.Peer,
		Addr:      n.self.Addr,
		Multiaddr: n.Multiaddr(),
		Gateway:   n.GatewayURL(),
		Idle:      n.Idle(),
		Ring:      n.ring.Status(),
		Crawl:     n.crawler.Stats(),
		Archive:   n.store.Stats(),
		Forward:   n.fwd.Stats(),
		Links: LinkStats{
			Received:  n.counters.linksReceived.Load(),
			BadLinks:  n.counters.badLinks.Load(),
			BadFrames: n.counters.badFrames.Load(),
			OverHops:  n.counters.overHops.Load(),
		},
		Politeness:  n.PolitenessStats(),
		Replication: n.ReplicationStats(),
		Trust:       TrustStats{NotMember: n.trust.notMember.Load(), Role: n.trust.role.Load()},
		TakenOver:   n.counters.takenOver.Load(),
		Wire:        n.wire(),
		Processing:  cpugate.Shared().Stats(),
	}
}

// adminMux serves the operator endpoints in front of the public gateway.
// POST /api/seed takes URLs (one per line) and is accepted only from
// loopback clients: a volunteer's node crawls what its operator asks, not
// what any visitor of the gateway asks.
//
// It dispatches by exact path rather than through http.ServeMux, which
// would clean "/web/*/http://…" paths and redirect them.
func (n *Node) adminMux(public http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/seed" {
			public.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST URLs, one per line", http.StatusMethodNotAllowed)
			return
		}
		if !fromLoopback(r) {
			http.Error(w, "seeding is allowed from this machine only", http.StatusForbidden)
			return
		}
		urls, err := readLines(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := n.Seed(r.Context(), urls); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// readLines returns the non-empty, trimmed lines of r.
func readLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), canon.MaxLen+2)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}
