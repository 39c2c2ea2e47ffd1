package node

import (
	"bufio"
	"context"
	"fmt"
	"github.com/herod-archive/herod/politeness"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
)

// rawReplicate sends one replicate request from h to p and returns the
// reply frame.
func rawReplicate(ctx context.Context, h host.Host, p peer.ID, req replicate.Request) ([]byte, error) {
	s, err := h.NewStream(ctx, p, replicateProtocol)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(20 * time.Second))
	if err := wire.WriteFrame(s, req.Encode()); err != nil {
		return nil, err
	}
	_ = s.CloseWrite()
	return wire.ReadFrame(bufio.NewReader(s), replicate.MaxReply)
}

// rawJSON sends one JSON request frame (and extra frames) on proto from h
// to p and reads one JSON reply into rep.
func rawJSON(ctx context.Context, h host.Host, p peer.ID, proto protocol.ID, req any, rep any, extra ...[]byte) error {
	s, err := h.NewStream(ctx, p, proto)
	if err != nil {
		return err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(20 * time.Second))
	if err := wire.WriteJSON(s, req); err != nil {
		return err
	}
	for _, f := range extra {
		if err := wire.WriteFrame(s, f); err != nil {
			return err
		}
	}
	_ = s.CloseWrite()
	return wire.ReadJSON(bufio.NewReader(s), 4<<20, rep)
}

// attack is one hostile request and what must come of it.
type attack struct {
	name string
	run  func(ctx context.Context) error // nil error: the attack got through
	// wantText, when set, must appear in the refusal (a member gets an
	// error reply; a non-member's stream is reset).
	wantText string
}

// TestHostilePeers: a non-member (a bare libp2p host, and a node running
// a ring of its own at a real, verifiable address) and a member acting
// outside its role try every protocol. Each attempt is refused, and the
// target stores nothing, queues no pull and no URL. A member acting
// within its role is served (the control).
func TestHostilePeers(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{VirtualServers: 2, StabilizeInterval: 100 * time.Millisecond,
		LinkReplicas: 2, ReplicationInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	target, member := lr.Nodes[0], lr.Nodes[1]
	tid := target.host.ID()

	bare := newBareHost(t)
	if err := bare.Connect(ctx, peer.AddrInfo{ID: tid, Addrs: target.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	lone, err := New(Config{DataDir: filepath.Join(t.TempDir(), "lone"), Listen: "127.0.0.1:0", Gateway: "127.0.0.1:0",
		VirtualServers: 1, ReplicationInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lone.Close()
	if err := lone.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lone.host.Connect(ctx, peer.AddrInfo{ID: tid, Addrs: target.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	loneV := lone.ring.Vnodes()[0]

	// The member's own virtual server and its true range.
	var mv ring.VnodeStatus
	for _, v := range member.ring.Status().Vnodes {
		if v.Range.Known {
			mv = v
			break
		}
	}
	if !mv.Range.Known {
		t.Fatal("member has no known range")
	}
	pull := func(a, b id.ID, from ring.Node) replicate.Request {
		return replicate.Request{Op: replicate.OpPull, A: a, B: b,
			From: replicate.Contact{Peer: from.Peer, Addr: from.Addr, Index: from.Index}}
	}
	ack := func(h host.Host, req replicate.Request) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			rep, err := rawReplicate(ctx, h, tid, req)
			if err != nil {
				return err
			}
			return replicate.DecodeAck(rep)
		}
	}
	entries := func(h host.Host) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			rep, err := rawReplicate(ctx, h, tid, replicate.Request{Op: replicate.OpEntries})
			if err != nil {
				return err
			}
			_, err = replicate.DecodeEntries(rep)
			return err
		}
	}
	links := func(h host.Host, replica bool, urls ...string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			var rep linksReply
			if err := rawJSON(ctx, h, tid, linksProtocol, linksHeader{VS: target.ring.Vnodes()[0].Index, Replica: replica, N: len(urls)}, &rep, encodeLinks(urls)); err != nil {
				return err
			}
			if rep.Error != "" {
				return fmt.Errorf("%s", rep.Error)
			}
			return nil
		}
	}
	robots := func(h host.Host, origin string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			var rep politeness.RobotsReply
			if err := rawJSON(ctx, h, tid, politeness.RobotsProtocol, politeness.RobotsRequest{Origin: origin}, &rep); err != nil {
				return err
			}
			if rep.Error != "" {
				return fmt.Errorf("%s", rep.Error)
			}
			return nil
		}
	}
	budget := func(h host.Host) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			var rep politeness.BudgetReply
			return rawJSON(ctx, h, tid, politeness.BudgetProtocol, politeness.BudgetRequest{Host: "example.org", Slots: 1, Interval: time.Second}, &rep)
		}
	}
	archiveGet := func(h host.Host) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			var rep archiveReply
			return rawJSON(ctx, h, tid, archiveProtocol, archiveRequest{Op: "versions", URL: "http://example.org/"}, &rep)
		}
	}
	query := func(h host.Host) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			var rep listBatch
			if err := rawJSON(ctx, h, tid, queryProtocol, queryRequest{Op: "list", Query: archiveQuery(gateway.Query{URL: "example.org", Match: gateway.MatchHost})}, &rep); err != nil {
				return err
			}
			if rep.Error != "" {
				return fmt.Errorf("%s", rep.Error)
			}
			return nil
		}
	}
	// A URL whose owner's replica (LinkReplicas 2: the next real node) is
	// the target, one the target owns (it is no replica of its own range),
	// and a loopback origin whose robots.txt the target owns. Each exists
	// in every ring of 3 nodes (the node before any of the target's
	// virtual servers has the target as its replica).
	var replicaURL, foreignURL, internalOrigin string
	for i := 0; replicaURL == "" || foreignURL == "" || internalOrigin == ""; i++ {
		if i == 10_000 {
			t.Fatalf("no URLs for the attacks in 10,000 tries: replica %q, own %q, robots %q", replicaURL, foreignURL, internalOrigin)
		}
		u := fmt.Sprintf("http://example.invalid/p%d", i)
		succs, err := target.ring.Successors(ctx, id.OfString(u), 2)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(succs) == 2 && succs[1].Peer == target.self.Peer && replicaURL == "":
			replicaURL = u
		case succs[0].Peer == target.self.Peer && foreignURL == "":
			foreignURL = u
		}
		o := fmt.Sprintf("http://127.0.0.1:%d", 1000+i)
		if k, _ := politeness.RobotsKey(o); internalOrigin == "" && lr.Owner(k) == target {
			internalOrigin = o
		}
	}

	before := target.store.Stats().Versions
	knownBefore := target.crawler.Stats().KnownURLs
	attacks := []attack{
		{"non-member: forged pull of its own range, A == B (whole ring)", ack(lone.host, pull(loneV.ID, loneV.ID, loneV)), ""},
		{"non-member (bare host): forged pull naming a member", ack(bare, pull(mv.Range.Start, mv.Range.End, mv.Node)), ""},
		{"non-member: whole-ring entries request (41 bytes)", entries(lone.host), ""},
		{"non-member: replica links", links(lone.host, true, replicaURL), ""},
		{"non-member: links", links(bare, false, "http://example.invalid/x"), ""},
		{"non-member: robots.txt of an internal origin", robots(lone.host, internalOrigin), ""},
		{"non-member: budget lease", budget(bare), ""},
		{"non-member: archive read", archiveGet(lone.host), ""},
		{"non-member: ring-wide query", query(bare), ""},
		{"member: whole-ring pull (A == B)", ack(member.host, pull(mv.ID, mv.ID, mv.Node)), errRole.Error()},
		{"member: pull of a range wider than its own", ack(member.host, pull(mv.ID.AddPow2(0), mv.ID, mv.Node)), errRole.Error()},
		{"member: pull naming another member", ack(member.host, pull(loneV.ID, loneV.ID, loneV)), errRole.Error()},
		{"member: replica links for a range the target does not replicate (its own)", links(member.host, true, foreignURL), errRole.Error()},
		{"member: replica links spanning two owners' ranges", links(member.host, true, replicaURL, foreignURL), errRole.Error()},
		{"member: robots.txt of an internal origin the target owns", robots(member.host, internalOrigin), "internal address"},
	}
	refused := 0
	for _, a := range attacks {
		err := a.run(ctx)
		switch {
		case err == nil:
			t.Errorf("%s: served", a.name)
		case a.wantText != "" && !strings.Contains(err.Error(), a.wantText):
			t.Errorf("%s: refused with %v, want %q", a.name, err, a.wantText)
		default:
			refused++
		}
	}

	// Within its role, the member serves two captures of its range that
	// are self-consistent records: one signed in another node's name, one
	// dated 2099 and signed by itself. The target pulls the range (the
	// control: a pull of the member's own range is served) and imports
	// neither.
	inRange := func(prefix string) string {
		for i := 0; ; i++ {
			u := fmt.Sprintf("http://example.invalid/%s%d", prefix, i)
			if id.InHalfOpen(id.OfString(u), mv.Range.Start, mv.Range.End) {
				return u
			}
		}
	}
	forged := []archive.Capture{
		{URL: inRange("forged"), Time: time.Now(), Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
			Body: []byte("<p>forged</p>"), Peer: lr.Nodes[2].self.Peer, Signature: make([]byte, 64)},
		{URL: inRange("future"), Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>from 2099</p>")},
	}
	for _, c := range forged {
		if _, _, err := member.store.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := ack(member.host, pull(mv.Range.Start, mv.Range.End, mv.Node))(ctx); err != nil {
		t.Errorf("member's pull of its own range refused: %v", err)
	}
	for !target.ReplicationIdle() || target.ReplicationStats().Syncs.Rejected+target.ReplicationStats().Syncs.Pulled < 2 {
		if ctx.Err() != nil {
			t.Fatalf("the target's pull of the member's range did not end: %+v", target.ReplicationStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := target.ReplicationStats().Syncs; st.Rejected != 2 || st.Pulled != 0 {
		t.Errorf("forged and future-dated captures: %d rejected, %d pulled; want 2, 0", st.Rejected, st.Pulled)
	} else {
		refused += 2
		t.Logf("forged and future-dated captures served by a member: 2 of 2 rejected on import")
	}
	if err := links(member.host, true, replicaURL)(ctx); err != nil {
		t.Errorf("member's replica links for a range the target replicates refused: %v", err)
	}
	t.Logf("attacks tried %d, refused %d", len(attacks)+2, refused)
	if got := target.store.Stats().Versions; got != before {
		t.Errorf("target stored %d versions during the attacks", got-before)
	}
	if st := target.ReplicationStats(); st.PullRequests != 1 {
		t.Errorf("%d pull requests accepted, want 1 (the control)", st.PullRequests)
	}
	if got := target.crawler.Stats().KnownURLs - knownBefore; got != 1 {
		t.Errorf("%d URLs queued, want 1 (the control's replica link)", got)
	}
	st := target.Status().Trust
	if st.NotMember < 2 || st.Role < 5 {
		t.Errorf("trust counters %+v: want ≥ 2 peers refused as non-members, ≥ 5 role refusals", st)
	}
}
