package node

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
)

// TestReplicaForgeryHeld: a ring of 4 real nodes, k = 3, rounds every
// 200 ms. A hostile member h, a replica (not the owner) of two URLs of
// an honest owner, stores captures of them signed by itself, dated now,
// while the owner is up and owns them, and keeps them quiet (its push
// does not hand them off): a made-up one, and a genuine one (the payload
// the site serves). The owner's round pulls both from h: neither is
// imported; both are held and the owner fetches both URLs itself. The
// genuine one is released and reaches its 3 holders; the made-up one is
// stored by neither the owner nor the other replica and witnessed by no
// honest node: only h keeps it. Without the round guard the owner
// imported the made-up capture, witnessed it and pushed it to the other
// replica.
//
// Then the honest take-over: the owner is down; the nodes that own its
// URLs meanwhile store captures of them (their own fetches, dated now);
// the owner comes back on its data and address, and its rounds import
// every one of them, holding none (a copy a former owner, no longer a
// holder, handed off first is imported by the round all the same). Its
// ranges' history survives the restart: a made-up capture h makes then,
// dated when the owner was up before, is held.
func TestReplicaForgeryHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("four-node ring: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const served = "<p>the page as the site serves it</p>"
	const madeUp = "<p>words the site never served</p>"
	site := servedSite(t, served)
	lr, err := StartLocalRing(ctx, t.TempDir(), 4, Config{
		VirtualServers:      4,
		StabilizeInterval:   100 * time.Millisecond,
		FlushInterval:       20 * time.Millisecond,
		ReplicationInterval: 200 * time.Millisecond,
		NoSync:              true,
		Crawl:               crawl.Config{HostRate: 1000, AllowPrivate: loopback},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	// The hostile member h: a replica of both URLs, whose owner is one
	// honest node.
	h := lr.Nodes[0]
	var owner *Node
	pick := func(tag string) (string, []*Node) {
		for i := 0; ; i++ {
			u := fmt.Sprintf("%s/%s/%d", site, tag, i)
			hs := lr.holders(id.OfString(u), ReplicationFactor)
			if hs[0] != h && slices.Contains(hs, h) && (owner == nil || hs[0] == owner) {
				owner = hs[0]
				return u, hs
			}
		}
	}
	forgedURL, holders := pick("forged")
	genuineURL, _ := pick("genuine")
	backDatedURL, _ := pick("back-dated")
	other := holders[slices.IndexFunc(holders[1:], func(n *Node) bool { return n != h })+1]
	// The owner has owned its ranges for a round or more.
	testwait.For(t, "the owner's first rounds", 30*time.Second, func() error {
		if r := owner.ReplicationStats().Rounds; r < 2 {
			return fmt.Errorf("%d rounds", r)
		}
		return nil
	})
	// h stores both quietly: its push neither offers nor hands them off.
	var putAt func(n *Node, u, body string, at time.Time) archive.Version
	h.store.OnAdd(nil)
	put := func(n *Node, u, body string) archive.Version {
		t.Helper()
		return putAt(n, u, body, time.Now())
	}
	putAt = func(n *Node, u, body string, at time.Time) archive.Version {
		t.Helper()
		v, _, err := n.store.Put(ctx, archive.Capture{URL: u, Time: at, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	forged := put(h, forgedURL, madeUp)
	genuine := put(h, genuineURL, served)
	h.store.OnAdd(h.versionAdded)
	holds := func(n *Node, v archive.Version) bool {
		ok, err := n.store.Holds(ctx, v.Entry())
		return err == nil && ok
	}

	// The owner's round pulls both from h. The genuine one is released
	// by the owner's fetch and reaches its 3 holders.
	testwait.For(t, "the genuine capture on its 3 holders", 60*time.Second, func() error {
		if holds(owner, forged) {
			return nil // the made-up one imported: fails below
		}
		for _, n := range holders {
			if !holds(n, genuine) {
				return fmt.Errorf("missing on %s%s", n.self.Addr, handOffReport(lr))
			}
		}
		return nil
	})
	// The made-up one: the owner fetched its URL and found another
	// payload.
	testwait.For(t, "the owner's own version of the forged URL", 60*time.Second, func() error {
		if holds(owner, forged) {
			return nil // fails below
		}
		vs, err := owner.store.Versions(ctx, forgedURL)
		if err != nil || !slices.ContainsFunc(vs, func(v archive.Version) bool { return v.Peer == owner.self.Peer }) {
			return fmt.Errorf("versions %+v, %v", vs, err)
		}
		return nil
	})
	waitPushIdle(ctx, t, lr)
	st := owner.ReplicationStats().HandOff
	t.Logf("owner's hand-off counters: %+v", st)
	if holds(owner, forged) || holds(other, forged) {
		t.Fatalf("the made-up capture stored: by the owner %v, by the other replica %v", holds(owner, forged), holds(other, forged))
	}
	if st.Guarded != 2 || st.Held != 1 || st.Released != 1 {
		t.Fatalf("owner's counters: guarded %d, held %d, released %d; want 2, 1, 1", st.Guarded, st.Held, st.Released)
	}
	// No honest node states it held the made-up capture: it is never
	// shown as witnessed (after 48 h, not at all).
	for _, n := range lr.Nodes {
		if n == h {
			continue
		}
		ws, err := n.store.Witnesses(ctx, forged)
		if err != nil || len(ws) != 0 {
			t.Errorf("%s witnesses the made-up capture: %+v, %v", n.self.Addr, ws, err)
		}
	}
	if !holds(h, forged) {
		t.Error("the hostile replica lost its own record")
	}

	// The honest take-over: the owner is down; the URLs it owned are
	// captured by their owners meanwhile.
	var urls []string
	for i := 0; len(urls) < 12; i++ {
		u := fmt.Sprintf("%s/away/%d", site, i)
		if lr.Owner(id.OfString(u)) == owner {
			urls = append(urls, u)
		}
	}
	cfg := owner.cfg
	cfg.Listen = owner.self.Addr // back on its address: the same ranges
	// A time the owner was up and owned them: a round saved its history
	// after it (the last time it was known up).
	upAt := time.Now()
	rounds := owner.ReplicationStats().Rounds
	testwait.For(t, "a round of the owner after upAt", 30*time.Second, func() error {
		if r := owner.ReplicationStats().Rounds; r < rounds+2 {
			return fmt.Errorf("%d rounds", r-rounds)
		}
		return nil
	})
	if err := owner.Close(); err != nil {
		t.Fatal(err)
	}
	lr.Nodes = slices.DeleteFunc(lr.Nodes, func(n *Node) bool { return n == owner })
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	var away []archive.Version
	for _, u := range urls {
		away = append(away, put(lr.Owner(id.OfString(u)), u, "<p>changed while the owner was away</p>"))
	}
	cfg.Join = []string{lr.Nodes[0].Multiaddr()}
	back, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	lr.Nodes = append(lr.Nodes, back)
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the take-over captures on the owner back", 90*time.Second, func() error {
		n := 0
		for _, v := range away {
			if lr.Owner(v.Key) == back && !holds(back, v) {
				return fmt.Errorf("%s missing%s", v.URL, handOffReport(lr))
			}
			if lr.Owner(v.Key) == back {
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("the owner back owns none of the %d URLs", len(away))
		}
		return nil
	})
	if st := back.ReplicationStats().HandOff; st.Guarded != 0 {
		t.Fatalf("the owner back's rounds held take-over captures: %+v", st)
	}

	// The owner's history outlives its restart: h's made-up capture,
	// made now but dated when the owner was up before it, is held too.
	h.store.OnAdd(nil)
	backDated := putAt(h, backDatedURL, madeUp, upAt)
	h.store.OnAdd(h.versionAdded)
	testwait.For(t, "the back-dated capture pulled by the owner back", 60*time.Second, func() error {
		if holds(back, backDated) || back.ReplicationStats().HandOff.Guarded > 0 {
			return nil
		}
		return fmt.Errorf("not pulled yet%s", handOffReport(lr))
	})
	if holds(back, backDated) {
		t.Fatal("the owner back imported a capture dated while it was up before its restart")
	}
}
