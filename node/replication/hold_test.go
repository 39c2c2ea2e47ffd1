package replication

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
)

// TestHandOffHeldUntilConfirmed: an owner, its replica and a sender that
// holds neither role, on a mock network. The sender hands off three
// records of the owner's range: a made-up capture, a genuine one (the
// payload the site serves) and a third past the hold's bound of 2 per
// sender (refused, counted). The owner stores neither, pushes neither,
// and queues both URLs for its own fetch. It restarts (a torn write and
// a garbled file in the held area are dropped); its own fetch of the
// genuine URL finds the held payload: the record is stored, with its
// fetcher's capture time, and reaches the replica; its fetch of the other
// URL finds another payload: nothing is released, and once the hold's
// time has passed the made-up record is dropped, counted. The sender
// keeps all three.
func TestHandOffHeldUntilConfirmed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hs := p2ptest.Hosts(t, 3)
	ownerC := ring.Contact{Peer: hs[0].ID().String(), Addr: "127.0.0.1:4001"}
	replicaC := ring.Contact{Peer: hs[1].ID().String(), Addr: "127.0.0.2:4001"}
	senderC := ring.Contact{Peer: hs[2].ID().String(), Addr: "127.0.0.3:4001"}
	ownerV := ring.Node{ID: ring.VirtualID(ownerC.Addr, 0), Contact: ownerC}
	replicaV := ring.Node{ID: ring.VirtualID(replicaC.Addr, 0), Contact: replicaC}
	rng := ring.Range{Start: replicaV.ID, End: ownerV.ID, Known: true} // (replica, owner]
	byPeer := map[string]ring.Contact{ownerC.Peer: ownerC, replicaC.Peer: replicaC, senderC.Peer: senderC}
	gate := func(s network.Stream) (ring.Node, bool) {
		return ring.Node{Contact: byPeer[s.Conn().RemotePeer().String()]}, true
	}
	os_, rs, xs := openStore(t), openStore(t), openStore(t)
	heldDir := t.TempDir()
	owners := succsRing(func(context.Context, id.ID, int) ([]ring.Node, error) { return []ring.Node{ownerV, replicaV}, nil })
	var mu sync.Mutex
	var rechecked []string
	newOwner := func() *Replicator {
		held, err := OpenHeld(heldDir, HoldLimits{PerSender: 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := New(Config{Self: ownerC, Local: os_, Source: os_, Open: p2ptest.Opener(hs[0]), Gate: gate,
			Held: held, Check: os_.CheckImport,
			Ring: statusRing{ring.Status{Vnodes: []ring.VnodeStatus{{Node: ownerV, Range: rng, Successors: []ring.Node{replicaV}}}}}})
		o.OnRecheck(func(_ context.Context, urls []string) error {
			mu.Lock()
			defer mu.Unlock()
			rechecked = append(rechecked, urls...)
			return nil
		})
		hs[0].SetStreamHandler(Protocol, o.Handle)
		return o
	}
	owner := newOwner()
	replica := New(Config{Self: replicaC, Local: rs, Source: rs, Open: p2ptest.Opener(hs[1]), Gate: gate, Ring: owners})
	sender := New(Config{Self: senderC, Local: xs, Source: xs, Open: p2ptest.Opener(hs[2]), Gate: gate, Ring: owners})
	hs[1].SetStreamHandler(Protocol, replica.Handle)
	hs[2].SetStreamHandler(Protocol, sender.Handle)

	// Three URLs of the owner's range, stored by the sender.
	urlIn := func(tag string) string {
		for i := 0; ; i++ {
			if u := fmt.Sprintf("http://site.example/%s/%d", tag, i); rng.Contains(id.OfString(u)) {
				return u
			}
		}
	}
	captured := time.Now().Add(-time.Hour).Truncate(time.Second)
	put := func(u, body string) archive.Version {
		v, _, err := xs.Put(ctx, archive.Capture{URL: u, Time: captured, Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	forged := put(urlIn("forged"), "<p>words the site never served</p>")
	genuine := put(urlIn("genuine"), "<p>the page as the site serves it</p>")
	third := put(urlIn("third"), "<p>one more</p>")
	es := []archive.Entry{forged.Entry(), genuine.Entry(), third.Entry()}

	if left := sender.handOff(ctx, es[:2], true); len(left) != 0 {
		t.Fatalf("hand-off left %d to retry; owner: %s", len(left), owner.Stats().LastError)
	}
	if left := sender.handOff(ctx, es[2:], true); len(left) != 1 { // the owner's answer is an error
		t.Fatalf("hand-off past the bound left %d to retry, want 1", len(left))
	}
	if err := owner.Stats().LastError; !strings.Contains(err, ErrHoldFull.Error()) {
		t.Errorf("owner's refusal %q does not say the hold is full", err)
	}
	holds := func(s *archive.Store, v archive.Version) bool {
		ok, err := s.Holds(ctx, v.Entry())
		return err == nil && ok
	}
	st := owner.Stats().HandOff
	if st.Held != 2 || st.Refused != 1 || st.Holds != 2 || holds(os_, forged) || holds(os_, genuine) || holds(os_, third) {
		t.Fatalf("after the hand-off: %+v; stored: forged %v genuine %v third %v", st, holds(os_, forged), holds(os_, genuine), holds(os_, third))
	}
	if !owner.PushIdle() || owner.Stats().Push.Queued != 0 {
		t.Fatalf("held records queued for the push: %+v", owner.Stats().Push)
	}
	mu.Lock()
	got := slices.Sorted(slices.Values(rechecked))
	rechecked = nil
	mu.Unlock()
	if want := []string{forged.URL, genuine.URL}; !slices.Equal(got, want) && !slices.Equal(got, []string{genuine.URL, forged.URL}) {
		t.Fatalf("URLs queued for the owner's fetch: %v, want %v", got, want)
	}

	// A restart (as after kill -9: a write torn before its rename, a
	// garbled file): the two records are still held, their URLs queued
	// again.
	for _, torn := range []string{"x.held.tmp", ".tmp-x.held-123"} { // an older write's, atomicfile's
		if err := os.WriteFile(filepath.Join(heldDir, torn), []byte("torn"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(heldDir, strings.Repeat("0", 80)+"1.warc.gz.held"), []byte("{garbled"), 0o644); err != nil {
		t.Fatal(err)
	}
	owner = newOwner()
	if st := owner.Stats().HandOff; st.Held != 2 {
		t.Fatalf("after a restart: %+v", st)
	}
	if des, _ := os.ReadDir(heldDir); len(des) != 2 {
		t.Fatalf("held area after a restart: %d files, want the 2 records", len(des))
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 3)
	go func() { owner.Run(runCtx, nil); done <- struct{}{} }()
	go func() { owner.Push(runCtx); done <- struct{}{} }()
	go func() { replica.Work(runCtx); done <- struct{}{} }()
	defer func() { stop(); <-done; <-done; <-done }()
	testwait.For(t, "held URLs queued again at start", 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(rechecked) != 2 {
			return fmt.Errorf("rechecked %v", rechecked)
		}
		return nil
	})

	// The owner's fetches: the site serves the genuine payload, and
	// another one for the made-up capture's URL.
	owner.Confirm(ctx, genuine.URL, 200, genuine.Digest)
	owner.Confirm(ctx, forged.URL, 200, id.Sum([]byte("<p>what the site serves</p>")))
	owner.Confirm(ctx, forged.URL, 404, forged.Digest) // same bytes, another status
	testwait.For(t, "the released record on the replica", 20*time.Second, func() error {
		if !holds(rs, genuine) {
			return fmt.Errorf("replica lacks it; owner %+v, push %+v, %s", owner.Stats().HandOff, owner.Stats().Push, owner.Stats().LastError)
		}
		return nil
	})
	v, _, err := os_.Get(ctx, genuine.URL, genuine.Time)
	if err != nil || !v.Time.Equal(captured) || v.Peer != genuine.Peer {
		t.Fatalf("released version: %+v, %v; want its capture time %s", v, err, captured)
	}
	st = owner.Stats().HandOff
	if st.Released != 1 || st.Held != 1 || st.Taken != 1 || holds(os_, forged) || holds(rs, forged) {
		t.Fatalf("after the owner's fetches: %+v; forged stored by owner %v, replica %v", st, holds(os_, forged), holds(rs, forged))
	}

	// Within the hold's time nothing expires; past it the made-up record
	// is dropped.
	if n := owner.ExpireHeld(time.Now().Add(DefaultHoldFor - time.Hour)); n != 0 {
		t.Fatalf("%d expired before their time", n)
	}
	if n := owner.ExpireHeld(time.Now().Add(DefaultHoldFor + time.Hour)); n != 1 {
		t.Fatalf("%d expired, want the made-up record", n)
	}
	st = owner.Stats().HandOff
	if st.Expired != 1 || st.Held != 0 || st.HeldBytes != 0 {
		t.Fatalf("after expiry: %+v", st)
	}
	if des, _ := os.ReadDir(heldDir); len(des) != 0 {
		t.Fatalf("held area after expiry: %d files", len(des))
	}
	owner.Confirm(ctx, forged.URL, 200, forged.Digest) // too late: nothing held
	if holds(os_, forged) || holds(rs, forged) {
		t.Fatal("an expired record was released")
	}
	for _, v := range []archive.Version{forged, genuine, third} {
		if !holds(xs, v) {
			t.Errorf("the sender lost %s", v.URL)
		}
	}
}

// TestHeldBounds: the held area refuses past each bound — records and
// bytes per sender, in total — with ErrHoldFull, and holds a record once.
func TestHeldBounds(t *testing.T) {
	h, err := OpenHeld(t.TempDir(), HoldLimits{PerSender: 2, Total: 3, PerSenderBytes: 100, TotalBytes: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(sender string, i int) heldRecord {
		return heldRecord{Entry: archive.Entry{Key: id.OfString(fmt.Sprint(sender, i)), Day: 1}, Sender: sender, Status: 200}
	}
	for _, c := range []struct {
		r    heldRecord
		size int
		full bool
	}{
		{rec("a", 1), 40, false},
		{rec("a", 1), 40, false}, // again: held once
		{rec("a", 2), 70, true},  // a's bytes
		{rec("a", 2), 40, false},
		{rec("a", 3), 1, true}, // a's records
		{rec("b", 1), 40, false},
		{rec("c", 1), 1, true}, // the total
	} {
		_, err := h.add(c.r, make([]byte, c.size))
		if full := errors.Is(err, ErrHoldFull); full != c.full || (err != nil && !full) {
			t.Fatalf("add %s/%s (%d bytes): %v, want full %v", c.r.Sender, c.r.Entry.Key.Short(), c.size, err, c.full)
		}
	}
	if n, b := h.Len(); n != 3 || b != 120 {
		t.Fatalf("held %d records, %d bytes; want 3, 120", n, b)
	}
	if !h.HasKey(rec("a", 2).Entry.Key) || h.HasKey(rec("c", 1).Entry.Key) {
		t.Fatal("HasKey: a held record's key not found, or a refused one's found")
	}
	h.done(rec("a", 2).Entry, true)
	if h.HasKey(rec("a", 2).Entry.Key) {
		t.Fatal("HasKey: a dropped record's key found")
	}
}
