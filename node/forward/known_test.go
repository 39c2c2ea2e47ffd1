package forward

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// holdRing answers Successors from a fakeRing: the owner of a key and the
// virtual servers after it, up to k distinct real nodes.
type holdRing struct{ stubRing }

func (h holdRing) Successors(_ context.Context, k id.ID, n int) ([]ring.Node, error) {
	fr := h.fakeRing
	i := fr.ownerIndex(k)
	out := []ring.Node{fr.nodes[i]}
	seen := map[string]bool{fr.nodes[i].Peer: true}
	for j := 1; j < len(fr.nodes) && len(seen) < n; j++ {
		v := fr.nodes[(i+j)%len(fr.nodes)]
		if !seen[v.Peer] {
			seen[v.Peer] = true
			out = append(out, v)
		}
	}
	return out, nil
}

// holds reports whether peer is among the holders of url's range.
func (h holdRing) holds(peer, url string, k int) bool {
	hs, _ := h.Successors(context.Background(), id.OfString(url), k)
	return slices.ContainsFunc(hs, func(n ring.Node) bool { return n.Peer == peer })
}

// knownTarget is a node of a 4-node ring (2 virtual servers each, k 2)
// serving the links protocol on a mock host, through a kit that admits
// the sender as a member.
func knownTarget(t *testing.T, perDay int, now func() time.Time) (*Links, *recCrawler, holdRing, func(urls []string) (Reply, error)) {
	t.Helper()
	hs := p2ptest.Hosts(t, 2)
	fr := newFakeRing(4, 2)
	hr := holdRing{stubRing{fr}}
	l := &Links{Ring: hr, Self: "peer0", LinkReplicas: 1, Replicas: 2, KnownPerDay: perDay, Now: now}
	f, err := New(Config{Ring: hr, Deliver: l.Deliver})
	if err != nil {
		t.Fatal(err)
	}
	c := &recCrawler{}
	l.Forwarder, l.Crawler = f, c
	sender := ring.Node{Contact: ring.Contact{Peer: "peer3"}}
	k := kit.New(kit.Config{Host: hs[1], Gate: func(network.Stream) (ring.Node, error) { return sender, nil }})
	k.MustHandle(l.Spec())
	send := func(urls []string) (Reply, error) {
		s, err := hs[0].NewStream(context.Background(), hs[1].ID(), Protocol)
		if err != nil {
			return Reply{}, err
		}
		var rep Reply
		err = rawKnown(s, urls, &rep)
		return rep, err
	}
	return l, c, hr, send
}

// TestKnownFlood: a member floods a node with 300,000 known URLs of every
// range in one batch. The node remembers only those of ranges it holds
// (none outside them), reports the rest as outside the sender's role,
// and its heap does not keep the batch.
func TestKnownFlood(t *testing.T) {
	l, c, hr, send := knownTarget(t, 0, nil)
	urls := make([]string, 300_000)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://flood%d.example/p%d", i%1000, i)
	}
	held := 0
	for _, u := range urls {
		if hr.holds("peer0", u, 2) {
			held++
		}
	}
	heap := func() uint64 {
		runtime.GC() // twice: pooled decoders go at the second
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	EncodeLinks(urls[:1]) // the encoder's tables, allocated once
	h0 := heap()
	rep, err := send(urls)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	remembered := len(c.remember)
	outside := 0
	for _, u := range c.remember {
		if !hr.holds("peer0", u, 2) {
			outside++
		}
	}
	c.remember = nil // what the crawler keeps is on disk
	c.mu.Unlock()
	growth := int64(heap()) - int64(h0)
	st := l.Stats()
	t.Logf("flood of %d URLs (%d in the target's ranges): %d remembered, %d outside its ranges; refused %d; reply %q; heap after %+.1f MiB",
		len(urls), held, remembered, outside, st.KnownRefused, rep.Error, float64(growth)/(1<<20))
	if outside != 0 {
		t.Errorf("%d URLs of ranges the target does not hold remembered", outside)
	}
	if remembered == 0 || !strings.Contains(rep.Error, "outside the sender's role") || rep.Accepted != remembered {
		t.Errorf("remembered %d, reply %+v", remembered, rep)
	}
	if st.KnownRefused+int64(remembered) != int64(len(urls)) {
		t.Errorf("refused %d + remembered %d != %d sent", st.KnownRefused, remembered, len(urls))
	}
	if growth > 8<<20 {
		t.Errorf("heap grew by %d bytes after the flood, bound 8 MiB", growth)
	}
}

// TestKnownPerDay: a sender's URLs of ranges the node holds are
// remembered up to KnownPerDay, refilled over the day.
func TestKnownPerDay(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	_, c, hr, send := knownTarget(t, 1000, func() time.Time { return now })
	// 1,600 URLs of one range the target holds: one group.
	first := ""
	var batch []string
	for i := 0; len(batch) < 1600; i++ {
		u := fmt.Sprintf("http://held.example/p%d", i)
		hs, _ := hr.Successors(context.Background(), id.OfString(u), 2)
		if first == "" && hr.holds("peer0", u, 2) {
			first = hs[0].ID.String()
		}
		if hs[0].ID.String() == first {
			batch = append(batch, u)
		}
	}
	for i, want := range []int{800, 200} {
		rep, err := send(batch[800*i : 800*(i+1)])
		if err != nil || rep.Accepted != want {
			t.Fatalf("batch %d: accepted %d, want %d; %q %v", i, rep.Accepted, want, rep.Error, err)
		}
	}
	now = now.Add(12 * time.Hour)
	if rep, _ := send(batch[:800]); rep.Accepted != 500 {
		t.Fatalf("half a day later: accepted %d, want 500", rep.Accepted)
	}
	if n := len(c.remember); n != 1500 {
		t.Fatalf("remembered %d, want 1500", n)
	}
}

// rawKnown sends urls as a known batch on s and reads the reply.
func rawKnown(s network.Stream, urls []string, rep *Reply) error {
	defer s.Close()
	if err := wire.WriteJSON(s, Header{Known: true, N: len(urls), Want: WantNone}); err != nil {
		return err
	}
	if err := wire.WriteFrame(s, EncodeLinks(urls)); err != nil {
		return err
	}
	_ = s.CloseWrite()
	return wire.ReadJSON(bufio.NewReader(s), MaxReply, rep)
}

// captured is a stream that keeps what is written to it (a request sent
// through a fake Exchanger).
type captured struct {
	network.Stream
	sent bytes.Buffer
}

func (c *captured) Write(b []byte) (int, error) { return c.sent.Write(b) }

// TestShareKnownPartial: a holder that refuses a share is sent nothing
// more in that call, every other holder still gets its groups, and the
// error names exactly the URLs that missed a holder, each once, for the
// replicator to share again.
func TestShareKnownPartial(t *testing.T) {
	fr := newFakeRing(4, 2)
	hr := holdRing{stubRing{fr}}
	const bad = "peer2"
	got := map[string][]string{} // URLs received, by holder
	asked := map[string]int{}    // requests sent, by holder
	exchange := func(_ context.Context, c ring.Contact, _ protocol.ID, fn func(network.Stream, *bufio.Reader) error) error {
		asked[c.Peer]++
		if c.Peer == bad {
			return errors.New("outside the sender's role")
		}
		var rep bytes.Buffer
		if err := wire.WriteJSON(&rep, Reply{}); err != nil {
			return err
		}
		s := &captured{}
		if err := fn(s, bufio.NewReader(&rep)); err != nil {
			return err
		}
		r := bufio.NewReader(&s.sent)
		var h Header
		if err := wire.ReadJSON(r, 1<<10, &h); err != nil {
			return err
		}
		b, err := wire.ReadFrame(r, 1<<20)
		if err != nil {
			return err
		}
		urls, err := DecodeLinks(b, h.N)
		if err != nil || !h.Known {
			return fmt.Errorf("known %v: %v", h.Known, err)
		}
		got[c.Peer] = append(got[c.Peer], urls...)
		return nil
	}
	l := &Links{Ring: hr, Self: "peer0", Replicas: 3, Exchange: exchange}
	urls := make([]string, 400)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://share%d.example/p%d", i%37, i)
	}
	err := l.ShareKnown(context.Background(), urls)
	var se *ShareError
	if !errors.As(err, &se) {
		t.Fatalf("share with a refusing holder: %v", err)
	}
	if asked[bad] != 1 {
		t.Errorf("the refusing holder was asked %d times in one share, want 1", asked[bad])
	}
	var missed []string
	for _, u := range urls {
		hs, _ := hr.Successors(context.Background(), id.OfString(u), 3)
		badHolds := false
		for _, h := range hs {
			switch {
			case h.Peer == "peer0":
			case h.Peer == bad:
				badHolds = true
			case !slices.Contains(got[h.Peer], u):
				t.Errorf("%s not shared with its holder %s", u, h.Peer)
			}
		}
		if badHolds {
			missed = append(missed, u)
		}
	}
	// The first group the refusing holder holds fails at it; the later
	// ones are not sent to it and fail too: exactly its URLs.
	slices.Sort(missed)
	failed := slices.Sorted(slices.Values(se.FailedURLs()))
	if len(missed) == 0 || !slices.Equal(failed, missed) {
		t.Errorf("failed %d URLs, want the %d the refusing holder holds", len(failed), len(missed))
	}
	if err := (&Links{Ring: hr, Self: "peer0", Replicas: 3, Exchange: func(ctx context.Context, c ring.Contact, p protocol.ID, fn func(network.Stream, *bufio.Reader) error) error {
		if c.Peer == bad {
			return nil // accepts everything
		}
		return exchange(ctx, c, p, fn)
	}}).ShareKnown(context.Background(), failed); err != nil {
		t.Errorf("sharing the failed URLs again: %v", err)
	}
}
