package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// TestHostileQuotaJunk: a member stores 3 MiB of signed junk in its own
// range; its replica, with a 2 MiB quota, takes it up to the member's
// share (half the quota) and refuses the rest, still stores every one of
// its own fetches, and does not download the refused junk again in later
// rounds: once every junk record was read once, their syncs skip it and
// receive only the range's listing.
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
	// Later rounds do not download the refused junk again. The junk
	// reaches the replica in the member's offers and in the syncs its
	// pull worker runs, after the request has returned, for the pull
	// requests of the member's rounds; records an offer could not copy
	// are left to those rounds. So the periodic rounds stop, and cycles
	// run (a member round, the replica's sync of the member's range that
	// it asks for, a replica round) until one reads no record: each
	// junk record has then been read once, stored or refused, and only
	// what later cycles read is counted.
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(0)
	}
	waitIdle := func(what string) {
		for !victim.ReplicationIdle() || !member.ReplicationIdle() {
			if ctx.Err() != nil {
				t.Fatalf("%s: replication never went idle", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// read counts the records the replica's syncs read: stored, refused
	// for the share, or lost on the way.
	read := func(st ReplicationStats) int64 { return st.Syncs.Pulled + st.Syncs.Shared + st.Syncs.Failed }
	received := func(st ReplicationStats) int64 {
		return st.Syncs.Traffic.Received + st.Push.Received.Traffic.Received
	}
	// cycle runs one cycle and reports whether the replica served the
	// member's pull request (a round's request can fail under load).
	cycle := func() bool {
		waitIdle("before a cycle")
		served := victim.ReplicationStats().PullRequests
		if err := member.Replicate(ctx); err != nil && ctx.Err() != nil {
			t.Fatal(err)
		}
		waitIdle("the replica's sync of the member's range")
		if err := victim.Replicate(ctx); err != nil && ctx.Err() != nil {
			t.Fatal(err)
		}
		return victim.ReplicationStats().PullRequests > served
	}
	for n := 0; ; n++ {
		st := victim.ReplicationStats()
		served := cycle()
		last := read(victim.ReplicationStats()) - read(st)
		if served && last == 0 {
			break
		}
		if n == 10 || ctx.Err() != nil {
			t.Fatalf("%d rounds never settled (the last read %d records of the member's range, its pull request served: %v): the refused junk is pulled again",
				n+1, last, served)
		}
	}
	before := victim.ReplicationStats()
	for n := 0; n < 5; {
		if ctx.Err() != nil {
			t.Fatalf("the replica served %d of 5 pull requests of the member's rounds", n)
		}
		if cycle() {
			n++
		}
	}
	after := victim.ReplicationStats()
	grew := received(after) - received(before)
	if again := after.Syncs.Shared - before.Syncs.Shared; again > 0 || grew > 64<<10 {
		t.Fatalf("5 rounds read %d refused records again and downloaded %d more bytes: the refused junk is pulled again", again, grew)
	}
	if after.Syncs.Skipped == before.Syncs.Skipped {
		t.Fatal("5 rounds skipped no refused record: the member's range was not synced")
	}
	t.Logf("replica holds %d of the member's bytes (share %d), refused %d versions; 5 more rounds received %d bytes, skipped %d records",
		victim.store.SignerBytes(member.self.Peer), share, victim.store.Stats().ShareRefused, grew, after.Syncs.Skipped-before.Syncs.Skipped)
}

// TestHostileQuotaRange: two members' identities fill one range (the
// owner's) with signed junk, each within its signer's share of its
// replica's quota; together they would take all of it. The replica
// holds at most the range's share (half the quota), refuses the rest
// (counted in status and /metrics) and still stores its own fetches.
func TestHostileQuotaRange(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const quota = 2 << 20
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{VirtualServers: 1, StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: 200 * time.Millisecond, Replicas: 3, NoSync: true, DictSamples: -1},
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
	victim, owner, second := lr.Nodes[0], lr.Nodes[1], lr.Nodes[2]
	// The second identity's junk reaches the victim only through the
	// owner's range.
	second.store.OnAdd(nil)
	page := func(seed uint64) []byte { // incompressible: 32 KiB stored as 32 KiB
		r := rand.New(rand.NewPCG(seed, 11))
		b := make([]byte, 32<<10)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return b
	}
	var urls []string // 96 URLs of the owner's range: 3 MiB
	for i := 0; len(urls) < 96; i++ {
		if u := fmt.Sprintf("http://junk.example/p%d", i); lr.Owner(id.OfString(u)) == owner {
			urls = append(urls, u)
		}
	}
	capture := func(u string, seed uint64) archive.Capture {
		return archive.Capture{URL: u, Time: time.Now(), Status: 200,
			Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: page(seed)}
	}
	for i, u := range urls {
		if i%2 == 0 {
			if _, _, err := owner.store.Put(ctx, capture(u, uint64(i))); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Signed by the second identity, held by the owner.
		v, _, err := second.store.Put(ctx, capture(u, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		data, err := second.store.ReadFile(ctx, v.Entry())
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := owner.store.Import(ctx, v.Entry().Name(), data); err != nil {
			t.Fatal(err)
		}
	}
	for victim.store.Stats().RangeRefused == 0 {
		if ctx.Err() != nil {
			t.Fatalf("the replica never refused for the range's share: holds %d + %d bytes of the range",
				victim.store.SignerBytes(owner.self.Peer), victim.store.SignerBytes(second.self.Peer))
		}
		time.Sleep(20 * time.Millisecond)
	}
	held := victim.store.SignerBytes(owner.self.Peer) + victim.store.SignerBytes(second.self.Peer)
	if share := int64(quota * archive.DefaultRangeShare); held > share {
		t.Fatalf("the range takes %d bytes of the replica, its share is %d", held, share)
	}
	for i := 0; i < 20; i++ { // 640 KiB of its own
		u := fmt.Sprintf("http://own.example/p%d", i)
		if _, _, err := victim.store.Put(ctx, capture(u, uint64(1000+i))); err != nil {
			t.Fatalf("own fetch %d refused: %v", i, err)
		}
	}
	m, err := http.Get(victim.GatewayURL() + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(m.Body)
	m.Body.Close()
	if !regexp.MustCompile(`(?m)^herod_archive_range_share_refused_total [1-9]`).Match(body) || !bytes.Contains(body, []byte("herod_archive_at_quota")) {
		t.Errorf("/metrics does not count the range's refusals:\n%s", regexp.MustCompile(`(?m)^herod_archive.*$`).FindAll(body, -1))
	}
	t.Logf("the replica holds %d bytes of the range (share %d), refused %d versions for it",
		held, int64(quota*archive.DefaultRangeShare), victim.store.Stats().RangeRefused)
}
