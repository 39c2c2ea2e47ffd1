package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// TestHostileQuotaJunk: a member stores 3 MiB of signed junk in its own
// range; its replica, with a 2 MiB quota, takes it up to the member's
// share (half the quota) and refuses the rest, still stores every one of
// its own fetches, and does not download the refused junk again in later
// rounds (the bytes it receives stop growing).
func TestHostileQuotaJunk(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const quota = 2 << 20
	lr, err := StartLocalRing(ctx, t.TempDir(), 2, Config{VirtualServers: 1, StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: 200 * time.Millisecond, Replicas: 2, NoSync: true, DictSamples: -1},
		func(i int, c *Config) {
			if i == 0 {
				c.Quota = quota
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	victim, member := lr.Nodes[0], lr.Nodes[1]
	page := func(seed uint64) []byte { // incompressible: 32 KiB stored as 32 KiB
		r := rand.New(rand.NewPCG(seed, 9))
		b := make([]byte, 32<<10)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return b
	}
	urlsOf := func(n *Node, count int, prefix string) []string {
		var out []string
		for i := 0; len(out) < count; i++ {
			u := fmt.Sprintf("http://%s.example/p%d", prefix, i)
			if lr.Owner(id.OfString(u)) == n {
				out = append(out, u)
			}
		}
		return out
	}
	put := func(n *Node, u string, seed uint64) error {
		_, _, err := n.store.Put(ctx, archive.Capture{URL: u, Time: time.Now(), Status: 200,
			Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: page(seed)})
		return err
	}
	for i, u := range urlsOf(member, 96, "junk") { // 3 MiB
		if err := put(member, u, uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The replica takes the junk up to the member's share.
	share := int64(quota * archive.DefaultSignerShare)
	for victim.store.Stats().ShareRefused == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the replica never refused junk: holds %d bytes of the member's", victim.store.SignerBytes(member.self.Peer))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if held := victim.store.SignerBytes(member.self.Peer); held > share {
		t.Fatalf("the member's versions take %d bytes of the replica, its share is %d", held, share)
	}
	// The replica's own fetches still fit.
	for i, u := range urlsOf(victim, 20, "own") { // 640 KiB
		if err := put(victim, u, uint64(1000+i)); err != nil {
			t.Fatalf("own fetch %d refused: %v", i, err)
		}
	}
	// Later rounds do not download the refused junk again.
	received := func() int64 {
		st := victim.ReplicationStats()
		return st.Syncs.Traffic.Received + st.Push.Received.Traffic.Received
	}
	rounds := func(n int) {
		for range n {
			if err := victim.repl.Round(ctx); err != nil && ctx.Err() != nil {
				t.Fatal(err)
			}
		}
	}
	// Once the member's pushes are done (each batch read once, refused
	// past the share) and two rounds have run, count what more rounds
	// download.
	for !member.repl.PushIdle() {
		if ctx.Err() != nil {
			t.Fatal("the member's pushes never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rounds(2)
	before := received()
	rounds(5)
	if grew := received() - before; grew > 64<<10 {
		t.Fatalf("5 rounds downloaded %d more bytes: the refused junk is pulled again", grew)
	}
	t.Logf("replica holds %d of the member's bytes (share %d), refused %d versions; 5 more rounds received %d bytes",
		victim.store.SignerBytes(member.self.Peer), share, victim.store.Stats().ShareRefused, received()-before)
}
