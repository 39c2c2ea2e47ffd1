package status

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/herod-archive/herod/node/ringpage"
)

// Members is the ring's real nodes as this node knows them (package
// ringpage): k, and every other node it has known within a day, up, dead
// or departed, with when the down ones were last seen up.
type Members struct {
	// K is the replication factor: the real nodes that should hold every
	// version.
	K int `json:"k"`
	// Up counts the nodes up, this one included; Dead and Departed the
	// others listed.
	Up       int `json:"up"`
	Dead     int `json:"dead"`
	Departed int `json:"departed"`
	// TooFew: fewer nodes are up than K, so no version can have K copies.
	TooFew bool              `json:"tooFew,omitempty"`
	Nodes  []ringpage.Member `json:"nodes,omitempty"`
}

// NewMembers counts ms, the nodes other than this one, for a ring of
// replication factor k.
func NewMembers(k int, ms []ringpage.Member) Members {
	out := Members{K: k, Up: 1, Nodes: ms}
	for _, m := range ms {
		switch m.State {
		case ringpage.StateUp:
			out.Up++
		case ringpage.StateDead:
			out.Dead++
		case ringpage.StateDeparted:
			out.Departed++
		}
	}
	out.TooFew = out.Up < k
	return out
}

var (
	mNodes = desc("ring_nodes", "Real nodes of the ring this node knows, this one included, by state: up, dead (failed within the last two days), departed (left).", "state")
	mK     = desc("replication_k", "The replication factor k: the real nodes that should hold every version.")
)

// describeMembers and collectMembers are Describe and Collect for Members.
func describeMembers(ch chan<- *prometheus.Desc) {
	ch <- mNodes
	ch <- mK
}

func collectMembers(ch chan<- prometheus.Metric, m Members) {
	for state, n := range map[string]int{ringpage.StateUp: m.Up, ringpage.StateDead: m.Dead, ringpage.StateDeparted: m.Departed} {
		ch <- prometheus.MustNewConstMetric(mNodes, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(mK, prometheus.GaugeValue, float64(m.K))
}
