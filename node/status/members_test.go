package status

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herod-archive/herod/node/ringpage"
)

// membersMetrics is how many metrics collectMembers exports: the nodes in
// each of three states, and k.
const membersMetrics = 4

// TestMembersMetrics: NewMembers counts this node up with the others by
// state and warns when fewer than k are up; the collector exports them.
func TestMembersMetrics(t *testing.T) {
	m := NewMembers(3, []ringpage.Member{{Peer: "b", State: ringpage.StateUp}, {Peer: "c", State: ringpage.StateDead}, {Peer: "d", State: ringpage.StateDeparted}})
	if m.Up != 2 || m.Dead != 1 || m.Departed != 1 || !m.TooFew || m.K != 3 {
		t.Fatalf("members %+v", m)
	}
	c := &Collector{Status: func() Status { return Status{Members: m} }, Caps: func() []Cap { return nil }}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	n := 0
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range x.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			got[key] = x.GetGauge().GetValue() + x.GetCounter().GetValue()
			if mf.GetName() == "herod_ring_nodes" || mf.GetName() == "herod_replication_k" {
				n++
			}
		}
	}
	for k, v := range map[string]float64{"herod_ring_nodes,state=up": 2, "herod_ring_nodes,state=dead": 1, "herod_ring_nodes,state=departed": 1, "herod_replication_k": 3} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if n != membersMetrics {
		t.Errorf("%d members metrics, want %d", n, membersMetrics)
	}
}
