package ring

import (
	"slices"
	"sync/atomic"
	"time"
)

// counters are the ring's monotonic event counts.
type counters struct {
	lookups, lookupFailures, hops, timeouts atomic.Uint64
	calls, callErrors, rounds               atomic.Uint64
	refused, verified, notifies, leaves     atomic.Uint64
	merges, twins, rebalances               atomic.Uint64
	localLookups, disowned                  atomic.Uint64
}

// Counters is a snapshot of the ring's counters.
type Counters struct {
	Lookups        uint64 `json:"lookups"`
	LookupFailures uint64 `json:"lookup_failures"`
	// Hops is the total number of remote lookup steps over all lookups.
	Hops uint64 `json:"hops"`
	// Timeouts counts lookup steps to nodes that did not answer.
	Timeouts   uint64 `json:"timeouts"`
	Calls      uint64 `json:"calls"`
	CallErrors uint64 `json:"call_errors"`
	// Rounds counts maintenance rounds.
	Rounds uint64 `json:"rounds"`
	// Refused counts virtual server claims that failed verification (liars
	// and misconfigured peers); Verified counts contacts verified.
	Refused  uint64 `json:"refused"`
	Verified uint64 `json:"verified"`
	Notifies uint64 `json:"notifies"`
	Leaves   uint64 `json:"leaves"`
	// Merges counts successors adopted by probing a formerly dead peer
	// (ring merging after a partition).
	Merges uint64 `json:"merges"`
	// Twins counts virtual servers this node moved to another index at
	// its join because another node at its IP had chosen the same one at
	// the same moment (Join).
	Twins uint64 `json:"twins"`
	// Rebalances counts virtual servers this node moved to another index
	// for a fairer share (Rebalance).
	Rebalances uint64 `json:"rebalances"`
	// LocalLookups counts lookups (of Lookups) and Successors calls
	// answered from this node's own tables without a message (known.go);
	// Disowned counts owners so named that said they were not
	// (Ring.Disowned).
	LocalLookups uint64 `json:"local_lookups"`
	Disowned     uint64 `json:"disowned"`
}

// VnodeStatus is one local virtual server's routing state.
type VnodeStatus struct {
	Node
	Range       Range    `json:"range"`
	Predecessor *Node    `json:"predecessor"`
	Successors  []Node   `json:"successors"`
	Fingers     []Finger `json:"fingers"`
}

// LeftWithin is how long Status lists a peer that announced a leave.
const LeftWithin = 10 * time.Minute

// Status is a JSON-serializable snapshot of the ring as this node sees it.
type Status struct {
	Self     Contact       `json:"self"`
	Vnodes   []VnodeStatus `json:"vnodes"`
	Suspects []string      `json:"suspects,omitempty"`
	// Left lists the peers that announced, within LeftWithin, that a
	// virtual server of theirs leaves the ring (a node leaving
	// gracefully, or moving a position), sorted.
	Left     []string      `json:"left,omitempty"`
	Refused  []RefusedPeer `json:"refused,omitempty"`
	Counters Counters      `json:"counters"`
}

// Status returns a snapshot of the local vnodes and counters.
func (r *Ring) Status() Status {
	r.mu.Lock()
	st := Status{Self: r.cfg.Self}
	for _, v := range r.vnodes {
		vs := VnodeStatus{Node: v.self, Range: v.rangeOf(), Successors: slices.Clone(v.succs), Fingers: v.distinctFingers()}
		if v.pred != nil {
			p := *v.pred
			vs.Predecessor = &p
		}
		st.Vnodes = append(st.Vnodes, vs)
	}
	for p := range r.suspect {
		if r.isSuspect(p) {
			st.Suspects = append(st.Suspects, p)
		}
	}
	for p, t := range r.leaving {
		if time.Since(t) > LeftWithin {
			delete(r.leaving, p)
			continue
		}
		st.Left = append(st.Left, p)
	}
	r.mu.Unlock()
	slices.Sort(st.Suspects)
	slices.Sort(st.Left)
	st.Refused = r.ver.recent()
	st.Counters = r.Counters()
	return st
}

// SuccessorsOf returns local virtual server index and a copy of its
// successor list, if it runs here: what Status holds of it, without
// building the rest (the links protocol asks it for every batch).
func (r *Ring) SuccessorsOf(index int) (Node, []Node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.vnodes {
		if v.self.Index == index {
			return v.self, slices.Clone(v.succs), true
		}
	}
	return Node{}, nil, false
}

// Counters returns a snapshot of the counters.
func (r *Ring) Counters() Counters {
	n := &r.n
	return Counters{
		Lookups: n.lookups.Load(), LookupFailures: n.lookupFailures.Load(), Hops: n.hops.Load(),
		Timeouts: n.timeouts.Load(), Calls: n.calls.Load(), CallErrors: n.callErrors.Load(),
		Rounds: n.rounds.Load(), Refused: n.refused.Load(), Verified: n.verified.Load(),
		Notifies: n.notifies.Load(), Leaves: n.leaves.Load(), Merges: n.merges.Load(), Twins: n.twins.Load(),
		Rebalances: n.rebalances.Load(), LocalLookups: n.localLookups.Load(), Disowned: n.disowned.Load(),
	}
}
