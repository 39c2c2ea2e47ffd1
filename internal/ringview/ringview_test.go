package ringview

import "testing"

// TestHealth: nodes up of those listed, versions below k summed over the
// nodes that answered only, and the warning exactly when fewer nodes are
// up than k.
func TestHealth(t *testing.T) {
	v := View{K: 3, Peers: []PeerSummary{
		{State: "up", BelowK: 400}, {State: "up", BelowK: 12, Reach: "relayed"},
		{State: "dead", BelowK: 99}, {State: "unreachable"},
	}}
	for _, tc := range []struct {
		k                 int
		headline, warning string
	}{
		{3, "2 of 4 nodes up · every version has fewer than k = 3 copies", "Only 2 nodes up, fewer than k = 3: no version can have 3 copies until more nodes join the ring."},
		{2, "2 of 4 nodes up · 412 versions with fewer than k = 2 copies", ""},
		{0, "2 of 4 nodes up · 412 versions with fewer than k copies", ""},
	} {
		v.K = tc.k
		h := v.Health()
		if h.Headline() != tc.headline || h.Warning() != tc.warning {
			t.Errorf("k = %d: %q, %q; want %q, %q", tc.k, h.Headline(), h.Warning(), tc.headline, tc.warning)
		}
	}
	if !v.Peers[1].NAT() || v.Peers[0].NAT() || !v.Peers[0].Up() || v.Peers[2].Up() {
		t.Error("NAT or Up wrong")
	}
}
