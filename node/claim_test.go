package node

import (
	"fmt"
	"os"
	"slices"

	"context"
	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"path/filepath"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/sampleweb"
)

// TestJoinerDoesNotRefetch: a node crawls a site alone; a second node
// joins the same day and takes part of the range; every URL is seeded
// again. The joiner claims each URL of its new range from the former
// owner, finds it fetched today, and fetches nothing: the site sees
// every URL once.
func TestJoinerDoesNotRefetch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	web := sampleweb.New(sampleweb.Config{Hosts: 2, Pages: 40, Seed: 5})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	start := func(name, ip, join string) *Node {
		return startClaimNode(ctx, t, filepath.Join(dir, name), ip, join, 0)
	}
	a := start("a", "127.0.0.61", "")
	lr := &LocalRing{Nodes: []*Node{a}}
	defer func() { lr.Close() }()
	if err := a.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	known := sortedKeys(requestsPerURL(web))

	b := start("b", "127.0.0.62", a.Multiaddr())
	lr.Nodes = append(lr.Nodes, b)
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Seed(ctx, known); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st := b.Status().Claims
	t.Logf("joiner: %d claims, %d found fetched today; former owner: %d claimed away", st.Sent, st.Taken, a.Status().Claims.Away)
	if st.Sent == 0 || st.Taken == 0 {
		t.Errorf("the joiner claimed %d URLs, %d taken: it should have claimed its range's URLs", st.Sent, st.Taken)
	}
	checkOncePerURL(t, "after the join", known, requestsPerURL(web))

	// The joiner receives its range's versions from the former owner by
	// replication, not by fetching them: it ends with every version (two
	// nodes: each holds the other's range as a replica), and the bytes
	// moved are about the data they carry.
	for _, n := range lr.Nodes {
		n.SetReplicationInterval(200 * time.Millisecond)
	}
	waitReplicated(ctx, t, lr)
	as, bs := a.Status(), b.Status()
	if bs.Archive.Versions != as.Archive.Versions {
		t.Errorf("the joiner holds %d versions, the former owner %d", bs.Archive.Versions, as.Archive.Versions)
	}
	var moved int64
	for _, w := range bs.Wire {
		if w.Protocol == string(replicateProtocol) {
			moved += w.In + w.Out
		}
	}
	t.Logf("join: %d versions, %d bytes on disk, %d bytes of replication traffic (%.2f× the data)",
		bs.Archive.Versions, bs.Archive.Bytes, moved, float64(moved)/float64(max(bs.Archive.Bytes, 1)))
}

// TestLeaverHandsOverFetches: two nodes crawl a site; one leaves
// gracefully the same day. Its successor takes its range over and queues
// the range's known URLs (it holds their versions as replicas), but the
// leaver handed over the keys it fetched that day, so none is fetched
// again.
func TestLeaverHandsOverFetches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	web := sampleweb.New(sampleweb.Config{Hosts: 2, Pages: 40, Seed: 6})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	start := func(name, ip, join string) *Node {
		return startClaimNode(ctx, t, filepath.Join(dir, name), ip, join, 200*time.Millisecond)
	}
	a := start("a", "127.0.0.63", "")
	b := start("b", "127.0.0.64", a.Multiaddr())
	lr := &LocalRing{Nodes: []*Node{a, b}}
	defer func() { lr.Close() }()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	waitReplicated(ctx, t, lr)
	known := sortedKeys(requestsPerURL(web))
	if b.crawler.Stats().FetchedToday == 0 {
		t.Fatal("the leaver fetched nothing")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lr.Nodes = lr.Nodes[:1]
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	for a.takeOver.Taken() == 0 { // the take-over queues the range's URLs
		if ctx.Err() != nil {
			t.Fatal("no take-over after the leave")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("take-over queued %d URLs", a.takeOver.Taken())
	checkOncePerURL(t, "after the leave", known, requestsPerURL(web))
}

// startClaimNode starts a node of the claim tests in dir, listening on ip,
// joined through join unless it is empty, with fast maintenance, no
// rebalancing, and replication rounds every repl (0: the default).
func startClaimNode(ctx context.Context, t *testing.T, dir, ip, join string, repl time.Duration) *Node {
	t.Helper()
	cfg := Config{
		DataDir: dir, Listen: ip + ":0", Gateway: "127.0.0.1:0",
		VirtualServers: 4, StabilizeInterval: 100 * time.Millisecond, FlushInterval: 20 * time.Millisecond,
		RebalanceInterval: -1, ReplicationInterval: repl,
		Crawl: crawl.Config{HostRate: 200, Concurrency: 16, AllowPrivate: loopback},
	}
	if join != "" {
		cfg.Join = []string{join}
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		t.Fatal(err)
	}
	return n
}

// TestJoinerGetsItsRange: four nodes crawl a site and replicate; a fifth
// joins the same day and every URL is seeded again. Nothing is fetched
// twice, and once replication settles the joiner holds exactly the
// versions whose holders (owner and successors, ReplicationFactor real
// nodes) include it, received from the former holders. The bytes moved
// into it are reported against the data it ends with.
func TestJoinerGetsItsRange(t *testing.T) {
	if os.Getenv("HEROD_RING_LONG") == "" {
		t.Skip("five-node join with replication (about a minute): set HEROD_RING_LONG=1 to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	web := sampleweb.New(sampleweb.Config{Hosts: 3, Pages: 60, Seed: 7})
	if err := web.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	first := startClaimNode(ctx, t, filepath.Join(dir, "n0"), "127.0.0.65", "", 200*time.Millisecond)
	lr := &LocalRing{Nodes: []*Node{first}}
	defer func() { lr.Close() }()
	for i := 1; i < 4; i++ {
		lr.Nodes = append(lr.Nodes, startClaimNode(ctx, t, filepath.Join(dir, fmt.Sprintf("n%d", i)),
			fmt.Sprintf("127.0.0.%d", 65+i), first.Multiaddr(), 200*time.Millisecond))
	}
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Seed(ctx, web.Seeds()); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	waitReplicated(ctx, t, lr)
	known := sortedKeys(requestsPerURL(web))

	j := startClaimNode(ctx, t, filepath.Join(dir, "joiner"), "127.0.0.70", first.Multiaddr(), 200*time.Millisecond)
	lr.Nodes = append(lr.Nodes, j)
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Seed(ctx, known); err != nil {
		t.Fatal(err)
	}
	if err := lr.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	checkOncePerURL(t, "after the join", known, requestsPerURL(web))
	waitReplicated(ctx, t, lr)

	all := map[archive.Entry]bool{}
	for _, n := range lr.Nodes {
		ents, err := n.Store().Entries(ctx, id.ID{}, id.ID{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			all[e] = true
		}
	}
	ents, err := j.Store().Entries(ctx, id.ID{}, id.ID{})
	if err != nil {
		t.Fatal(err)
	}
	held := map[archive.Entry]bool{}
	for _, e := range ents {
		held[e] = true
	}
	var want, extra, missing int
	for e := range all {
		holder := slices.Contains(lr.holders(e.Key, ReplicationFactor), j)
		switch {
		case holder && held[e]:
			want++
		case holder:
			missing++
		case held[e]:
			extra++
		}
	}
	if missing > 0 || extra > 0 || want == 0 {
		t.Errorf("the joiner holds %d of its %d versions and %d it does not hold by the ring", want, want+missing, extra)
	}
	st := j.Status()
	var in int64
	for _, w := range st.Wire {
		if w.Protocol == string(replicateProtocol) {
			in += w.In
		}
	}
	t.Logf("join: the joiner holds %d of %d versions (%d bytes); %d bytes of replication traffic came in (%.2f× the data)",
		want, len(all), st.Archive.Bytes, in, float64(in)/float64(max(st.Archive.Bytes, 1)))
}
