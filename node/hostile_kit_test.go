package node

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/forward"
	"github.com/herod-archive/herod/node/render"
	"github.com/herod-archive/herod/replicate"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

// ringProtocols answer peers that are not members yet, by design: a
// joiner needs them (ring/p2p). Every other herod protocol goes through
// the node's kit.
var ringProtocols = []protocol.ID{p2p.Protocol, p2p.ObserveProtocol, p2p.DialbackProtocol, p2p.DHTPrefix + "/kad/1.0.0"}

// TestEveryProtocolThroughKit: every herod protocol a started node's host
// serves, but the ring's own, was registered through the kit, and so was
// every protocol with a stream limit (limits.go).
func TestEveryProtocolThroughKit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := New(Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Gateway: "127.0.0.1:0", VirtualServers: 1, ReplicationInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	kitted := n.kit.Registered()
	for _, p := range n.host.Mux().Protocols() {
		if strings.HasPrefix(string(p), "/herod/") && !slices.Contains(kitted, p) && !slices.Contains(ringProtocols, p) {
			t.Errorf("protocol %s registered outside the kit", p)
		}
	}
	for p := range protocolLimits {
		// The render protocol is registered only on a node with the
		// browser-capture role (render.go), through the kit.
		if !slices.Contains(kitted, p) && p != p2p.Protocol && p != render.RenderProtocol {
			t.Errorf("protocol %s has stream limits but no kit registration", p)
		}
	}
	t.Logf("%d protocols through the kit: %v", len(kitted), kitted)
}

// bombSource is a hostile member's replication source: the records it
// lists are its own, the bytes it sends for them are bombs.
type bombSource struct {
	*archive.Store
	bombs map[archive.Entry][]byte
}

func (b bombSource) ReadFile(ctx context.Context, e archive.Entry) ([]byte, error) {
	if d, ok := b.bombs[e]; ok {
		return d, nil
	}
	return b.Store.ReadFile(ctx, e)
}

// ReadStored sends the same bombs to replicas that read records as
// stored (replicate.OpReadStored).
func (b bombSource) ReadStored(ctx context.Context, e archive.Entry) ([]byte, error) {
	if d, ok := b.bombs[e]; ok {
		return d, nil
	}
	return b.Store.ReadStored(ctx, e)
}

// ReadFileWithin and ReadStoredWithin are the reads the replication
// server answers with: the same bombs.
func (b bombSource) ReadFileWithin(ctx context.Context, e archive.Entry, room func(int64) bool) ([]byte, error) {
	if d, ok := b.bombs[e]; ok {
		return d, nil
	}
	return b.Store.ReadFileWithin(ctx, e, room)
}

func (b bombSource) ReadStoredWithin(ctx context.Context, e archive.Entry, room func(int64) bool) ([]byte, error) {
	if d, ok := b.bombs[e]; ok {
		return d, nil
	}
	return b.Store.ReadStoredWithin(ctx, e, room)
}

// gz returns parts as one gzip member.
func gz(parts ...[]byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	for _, p := range parts {
		zw.Write(p)
	}
	zw.Close()
	return b.Bytes()
}

// hostileKitHeapBound bounds the growth of the process's heap (a ring of
// 3 nodes and the attacker) at its peak while the attacks of
// TestHostileKit run, over its level before them. The attacks would take
// more than it each before the kit: 200 MB declared by one record, 64 MiB
// expanded by another, 1 GiB frames.
const hostileKitHeapBound = 48 << 20

// TestHostileKit: a member of a 3-node ring (k 2) running a modified
// herod sends the victim oversized frames on three protocols, serves it
// decompression bombs when the victim pulls its range, and floods it with
// 300,000 known URLs of ranges the victim does not hold. Each is refused:
// the frames are counted as bad, the bombs rejected on import (nothing
// stored), no URL remembered; the victim's heap stays within
// hostileKitHeapBound at its peak and returns to its level.
func TestHostileKit(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One virtual server each: with k 2, every node holds two of the three
	// ranges, and the third is the flood's.
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{VirtualServers: 1, StabilizeInterval: 100 * time.Millisecond,
		Replicas: 2, ReplicationInterval: -1, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	// The member: a node with a virtual server whose range the victim
	// replicates (the next real node after it).
	var victim, member *Node
	var mv ring.VnodeStatus
	for _, m := range lr.Nodes {
		for _, v := range m.ring.Status().Vnodes {
			if !v.Range.Known || member != nil {
				continue
			}
			succs, err := m.ring.Successors(ctx, v.ID, 2)
			if err != nil || len(succs) < 2 {
				continue
			}
			for _, n := range lr.Nodes {
				if n.self.Peer == succs[1].Peer && n != m {
					victim, member, mv = n, m, v
				}
			}
		}
	}
	if member == nil {
		t.Fatal("no virtual server whose range another node replicates")
	}
	vid := victim.host.ID()

	// Holders of a key, computed from every node's virtual servers.
	var all []ring.Node
	for _, n := range lr.Nodes {
		all = append(all, n.ring.Vnodes()...)
	}
	slices.SortFunc(all, func(a, b ring.Node) int { return a.ID.Cmp(b.ID) })
	holds := func(peer string, k id.ID) bool {
		i, _ := slices.BinarySearchFunc(all, k, func(n ring.Node, k id.ID) int { return n.ID.Cmp(k) })
		seen := map[string]bool{}
		for j := 0; len(seen) < 2; j++ {
			seen[all[(i+j)%len(all)].Peer] = true
		}
		return seen[peer]
	}
	var flood []string
	for i := 0; len(flood) < 300_000; i++ {
		if i == 10_000_000 {
			t.Fatalf("%d URLs outside the victim's ranges in 10,000,000 tries", len(flood))
		}
		u := fmt.Sprintf("http://flood%d.example/p%d", i%1000, i)
		if !holds(victim.self.Peer, id.OfString(u)) {
			flood = append(flood, u)
		}
	}
	floodBatch := forward.EncodeLinks(flood)

	// The member's bombs, served for three genuine captures of its range.
	zeros := make([]byte, 64<<20)
	head := func(n int64) []byte {
		return fmt.Appendf(nil, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.org/\r\nContent-Length: %d\r\n\r\n", n)
	}
	bombs := [][]byte{
		gz(head(200_000_000), zeros[:1<<10]),                          // declares 200 MB
		gz(head(64<<20), zeros, []byte("\r\n\r\n")),                   // expands to 64 MiB
		gz(head(2), []byte("ab\r\n\r\n"), zeros),                      // 64 MiB after a short record
		gz([]byte("WARC/1.1\r\n"), bytes.Repeat(zeros[:8<<10], 8000)), // 64 MiB header line
	}
	zeros = nil
	src := bombSource{Store: member.store, bombs: map[archive.Entry][]byte{}}
	// The member does not push its captures (a push carries the genuine
	// records, OpOfferStored): the victim gets them only by its pull, which
	// the member answers with the bombs.
	member.store.OnAdd(nil)
	for i := 0; len(src.bombs) < len(bombs); i++ {
		u := fmt.Sprintf("http://example.invalid/bomb%d", i)
		if !id.InHalfOpen(id.OfString(u), mv.Range.Start, mv.Range.End) {
			continue
		}
		v, _, err := member.store.Put(ctx, archive.Capture{URL: u, Time: time.Now().Add(-time.Hour), Status: 200,
			Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("genuine " + u)})
		if err != nil {
			t.Fatal(err)
		}
		src.bombs[v.Entry()] = bombs[len(src.bombs)]
	}
	bombs = nil
	srv := replicate.Server{Source: src}
	member.host.SetStreamHandler(replicateProtocol, func(s network.Stream) {
		defer s.Close()
		req, err := wire.ReadFrame(bufio.NewReader(s), replicate.MaxRequest)
		if err != nil {
			s.Reset()
			return
		}
		rep, _ := srv.Handle(ctx, req)
		_ = wire.WriteFrame(s, rep)
	})

	// An oversized frame: a header declaring size, then 64 KiB.
	oversized := func(p protocol.ID, size uint64) func() error {
		return func() error {
			s, err := member.host.NewStream(ctx, vid, p)
			if err != nil {
				return err
			}
			defer s.Close()
			_ = s.SetDeadline(time.Now().Add(20 * time.Second))
			_, _ = s.Write(binary.AppendUvarint(nil, size))
			_, _ = s.Write(make([]byte, 64<<10))
			_ = s.CloseWrite()
			_, err = wire.ReadFrame(bufio.NewReader(s), 1<<20)
			return err
		}
	}
	known := func() error {
		var rep forward.Reply
		if err := rawJSON(ctx, member.host, vid, linksProtocol, forward.Header{Known: true, N: len(flood), Want: forward.WantNone}, &rep, floodBatch); err != nil {
			return err
		}
		if rep.Accepted > 0 || rep.Error == "" {
			return nil
		}
		return fmt.Errorf("%s", rep.Error)
	}
	pullBombs := func() error {
		req := replicate.Request{Op: replicate.OpPull, A: mv.Range.Start, B: mv.Range.End,
			From: replicate.Contact{Peer: mv.Peer, Addr: mv.Addr, Index: mv.Index}}
		rep, err := rawReplicate(ctx, member.host, vid, req)
		if err != nil {
			return fmt.Errorf("pull request: %w", err)
		}
		if err := replicate.DecodeAck(rep); err != nil {
			return fmt.Errorf("pull request refused: %w", err)
		}
		for !victim.ReplicationIdle() || victim.ReplicationStats().Syncs.Rejected+victim.ReplicationStats().Syncs.Pulled < int64(len(src.bombs)) {
			if ctx.Err() != nil {
				return fmt.Errorf("the victim's pull did not end: %+v", victim.ReplicationStats())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := victim.ReplicationStats().Syncs; st.Pulled != 0 {
			return nil // a bomb got in
		}
		return fmt.Errorf("%d bombs rejected", victim.ReplicationStats().Syncs.Rejected)
	}

	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	h0 := heap()
	var peak atomic.Int64 // since the attack began
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			for p := peak.Load(); int64(m.HeapAlloc) > p && !peak.CompareAndSwap(p, int64(m.HeapAlloc)); p = peak.Load() {
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	badBefore := victim.counters.badFrames.Load()
	knownBefore := victim.crawler.Stats().KnownURLs
	versions := victim.store.Stats().Versions
	attacks := []struct {
		name string
		run  func() error // nil: got through
	}{
		{"links frame declaring 1 GiB", oversized(linksProtocol, 1<<30)},
		{"claim frame declaring 100 MiB", oversized(claimProtocol, 100<<20)},
		{"query frame declaring 1 GiB", oversized(queryProtocol, 1<<30)},
		{"archive frame declaring 1 GiB", oversized(archiveProtocol, 1<<30)},
		{"300,000 known URLs of ranges the victim does not hold", known},
		{"decompression bombs served to the victim's pull (200 MB declared, 64 MiB expanded ×2, 64 MiB header)", pullBombs},
	}
	refused := 0
	for _, a := range attacks {
		base := heap()
		peak.Store(base)
		err := a.run()
		grew := peak.Load() - base
		if err == nil {
			t.Errorf("%s: got through", a.name)
		} else {
			refused++
			t.Logf("%s: refused (%v); heap peak +%.1f MiB", a.name, err, float64(grew)/(1<<20))
		}
		if grew > hostileKitHeapBound {
			t.Errorf("%s: heap peaked %d bytes above its level, bound %d", a.name, grew, hostileKitHeapBound)
		}
	}
	close(stop)
	wg.Wait()
	after := heap()
	t.Logf("attacks tried %d, refused %d; heap before %.1f MiB, after %.1f MiB; bound on each attack's peak +%d MiB",
		len(attacks), refused, float64(h0)/(1<<20), float64(after)/(1<<20), hostileKitHeapBound>>20)
	if after-h0 > 8<<20 {
		t.Errorf("heap %d bytes above its level after the attacks, bound 8 MiB", after-h0)
	}
	if bad := victim.counters.badFrames.Load() - badBefore; bad < 4 {
		t.Errorf("%d bad frames counted, want ≥ 4 (the oversized frames)", bad)
	}
	if got := victim.crawler.Stats().KnownURLs - knownBefore; got != 0 {
		t.Errorf("%d flooded URLs remembered", got)
	}
	if st := victim.links.Stats(); st.KnownRefused < int64(len(flood)) {
		t.Errorf("known URLs refused %d, want %d", st.KnownRefused, len(flood))
	}
	if got := victim.store.Stats().Versions; got != versions {
		t.Errorf("victim stored %d versions during the attacks", got-versions)
	}
	if st := victim.ReplicationStats().Syncs; st.Rejected != int64(len(src.bombs)) {
		t.Errorf("bombs rejected %d, want %d", st.Rejected, len(src.bombs))
	}
}
