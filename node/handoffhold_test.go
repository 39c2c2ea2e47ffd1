package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/node/replication"
)

// TestHandOffForgeryHeld: a hostile member of a ring of 4 real nodes,
// none of the key's 3 holders, signs a made-up capture of an honest
// node's URL, dated now, and hands it to the owner (its push does, as for
// any version it stores outside its ranges); beside it, a genuine capture
// of another URL, whose payload is what the site serves. The owner holds
// both and fetches both URLs itself: the genuine capture is released and
// reaches the key's 3 holders, listed and replayed by every honest
// gateway at its original capture time; the made-up one is stored by no
// holder, listed and replayed by no honest gateway, counted held, then
// expired once the hold's time has passed (a clock 7 days on). Before
// the hold, the owner imported the made-up capture, witnessed it and
// pushed it to its replicas.
func TestHandOffForgeryHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("four-node ring: skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const served = "<p>the page as the site serves it</p>"
	const madeUp = "<p>words the site never served</p>"
	site := servedSite(t, served)
	lr, err := StartLocalRing(ctx, t.TempDir(), 4, Config{
		VirtualServers:      4,
		StabilizeInterval:   100 * time.Millisecond,
		FlushInterval:       20 * time.Millisecond,
		ReplicationInterval: -1, // no rounds: the push hands off
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
	// The hostile member h: no holder of either URL.
	h := lr.Nodes[0]
	pick := func(tag string) (string, []*Node) {
		for i := 0; ; i++ {
			u := fmt.Sprintf("%s/%s/%d", site, tag, i)
			if hs := lr.holders(id.OfString(u), ReplicationFactor); !slices.Contains(hs, h) {
				return u, hs
			}
		}
	}
	forgedURL, forgedHolders := pick("forged")
	genuineURL, genuineHolders := pick("genuine")
	owner := forgedHolders[0]
	put := func(u, body string) archive.Version {
		t.Helper()
		v, _, err := h.store.Put(ctx, archive.Capture{URL: u, Time: time.Now().Add(-time.Minute), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	forged := put(forgedURL, madeUp)
	genuine := put(genuineURL, served)

	holds := func(n *Node, v archive.Version) bool {
		ok, err := n.store.Holds(ctx, v.Entry())
		return err == nil && ok
	}
	// The genuine capture: released by its owner's fetch, on every holder.
	testwait.For(t, "the genuine capture on its 3 holders", 30*time.Second, func() error {
		for _, n := range genuineHolders {
			if !holds(n, genuine) {
				return fmt.Errorf("missing on %s%s", n.self.Addr, handOffReport(lr))
			}
		}
		return nil
	})
	// The made-up one: the owner fetched its URL and found another payload.
	testwait.For(t, "the owner's own version of the forged URL", 30*time.Second, func() error {
		vs, err := owner.store.Versions(ctx, forgedURL)
		if err != nil || !slices.ContainsFunc(vs, func(v archive.Version) bool { return v.Peer == owner.self.Peer }) {
			return fmt.Errorf("versions %+v, %v", vs, err)
		}
		return nil
	})
	st := owner.ReplicationStats().HandOff
	if st.Held != 1 || st.Holds < 1 || st.Rechecks < 1 {
		t.Fatalf("owner's hand-off counters: %+v", st)
	}
	waitPushIdle(ctx, t, lr)
	for _, n := range forgedHolders {
		if holds(n, forged) {
			t.Errorf("%s stores the made-up capture", n.self.Addr)
		}
	}
	ts := forged.Time.UTC().Format("20060102150405")
	for _, n := range lr.Nodes {
		if n == h {
			continue // its own gateway shows its own store
		}
		gw := n.readerArchive()
		vs, err := gw.Versions(ctx, forgedURL)
		if err != nil || slices.ContainsFunc(vs, func(v archive.Version) bool { return v.Digest == forged.Digest || v.Peer == h.self.Peer }) {
			t.Errorf("%s's gateway lists the made-up capture: %+v, %v", n.self.Addr, vs, err)
		}
		gs, err := gw.Versions(ctx, genuineURL)
		if err != nil || !slices.ContainsFunc(gs, func(v archive.Version) bool { return v.Time.Equal(genuine.Time) && v.Peer == h.self.Peer }) {
			t.Errorf("%s's gateway does not list the genuine capture at its time %s: %+v, %v", n.self.Addr, genuine.Time, gs, err)
		}
		for _, c := range []struct{ url, notWant, want string }{{forgedURL, madeUp, served}, {genuineURL, "", served}} {
			resp, err := http.Get(n.ReplayURL() + "web/" + ts + "id_/" + c.url)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(body) != c.want || (c.notWant != "" && strings.Contains(string(body), c.notWant)) {
				t.Errorf("%s: replay of %s as of %s: %d %q, want %q", n.self.Addr, c.url, ts, resp.StatusCode, body, c.want)
			}
		}
	}

	// Seven days on, no own fetch confirmed it: dropped, counted, logged;
	// the hostile member still has its record.
	if n := owner.repl.ExpireHeld(time.Now().Add(replication.DefaultHoldFor + time.Hour)); n != 1 {
		t.Fatalf("expired %d held records, want 1", n)
	}
	if st := owner.ReplicationStats().HandOff; st.Held != 0 || st.Expired != 1 {
		t.Fatalf("owner's hand-off counters after expiry: %+v", st)
	}
	if st := genuineHolders[0].ReplicationStats().HandOff; st.Released != 1 {
		t.Fatalf("the genuine capture's owner's hand-off counters: %+v", st)
	}
	if holds(owner, forged) || !holds(h, forged) {
		t.Fatalf("after expiry: owner stores the made-up capture %v, its signer %v", holds(owner, forged), holds(h, forged))
	}
}
