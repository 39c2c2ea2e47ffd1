package node

import (
	"context"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway/gatewaytest"
	"github.com/herod-archive/herod/internal/id"
)

// TestResolverSuite runs the gateway's archive contract
// (gatewaytest.TestArchive) against the archive the node gives its
// gateway: a node of a three-node ring answers each URL from its holders,
// the captures stored at their owners only (k = 1), signed by them and
// verified on the way. The captures are minutes apart and recent: a
// member's listing shows a capture as of its date only when a witness
// vouches for it or it is younger than archive.MaxWitnessDelay.
func TestResolverSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr := startStableRing(ctx, t, t.TempDir(), 3, Config{VirtualServers: 2, Replicas: 1, StabilizeInterval: 100 * time.Millisecond, NoSync: true})
	defer lr.Close()
	// The suite's URLs are on hosts suite.example and suite-two.example:
	// ask a node that does not own its main page.
	asked := lr.Nodes[0]
	if lr.Owner(id.OfString("http://suite.example/page")) == asked {
		asked = lr.Nodes[1]
	}
	remote := 0
	add := func(ctx context.Context, c *archive.Capture) error {
		owner := lr.Owner(id.OfString(c.URL))
		if owner != asked {
			remote++
		}
		_, _, err := owner.store.Put(ctx, *c)
		return err
	}
	gatewaytest.TestArchive(t, gatewaytest.Harness{Archive: (*resolver)(asked), Add: add,
		Start: time.Now().UTC().Truncate(time.Second).Add(-time.Hour), Step: time.Minute})
	if remote == 0 {
		t.Error("every capture was the asked node's own: the suite did not cross the ring")
	}
}
