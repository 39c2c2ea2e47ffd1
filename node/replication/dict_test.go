package replication

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/p2ptest"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// trainedStore returns a store that has trained its dictionary.
func trainedStore(t *testing.T) *archive.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, DictSamples: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i := range 20 {
		page := fmt.Sprintf("<html><body><nav>%s</nav><p>%d</p></body></html>", strings.Repeat("home about archive ", 30), i*7919)
		if _, _, err := s.Put(ctx, archive.Capture{URL: fmt.Sprintf("http://h.example/p%d", i), Time: time.Now(),
			Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(page)}); err != nil {
			t.Fatal(err)
		}
	}
	tick := time.NewTicker(10 * time.Millisecond) // the training runs in the background
	defer tick.Stop()
	for _, ok := s.OwnDictionary(); !ok; _, ok = s.OwnDictionary() {
		select {
		case <-ctx.Done():
			t.Fatal("no dictionary trained")
		case <-tick.C:
		}
	}
	return s
}

// held serves dictionaries once release is closed, one byte changed if
// forge is set.
type held struct {
	Dicts
	release chan struct{}
	forge   bool
}

func (h held) Dictionary(ref archive.DictRef) ([]byte, error) {
	<-h.release
	raw, err := h.Dicts.Dictionary(ref)
	if err != nil || !h.forge {
		return raw, err
	}
	raw = append([]byte(nil), raw...)
	raw[len(raw)/2] ^= 1
	return raw, nil
}

// waiters returns how many callers wait for the fetch of hash under way.
func (r *Replicator) waiters(ref archive.DictRef) int {
	r.dicts.mu.Lock()
	defer r.dicts.mu.Unlock()
	if call := r.dicts.running[ref.Hash]; call != nil {
		return call.waiters
	}
	return -1
}

// TestDictionaryFetchedOnce: over DictProtocol on real hosts (mock
// network) and the node's kit, concurrent requests for a dictionary a
// replica lacks make one fetch, which the replica's store accepts; a
// peer sending a forged copy is refused and not asked again; a
// dictionary the peer does not hold is an error.
func TestDictionaryFetchedOnce(t *testing.T) {
	ctx := context.Background()
	owner := trainedStore(t)
	ref, _ := owner.OwnDictionary()
	for _, forge := range []bool{false, true} {
		t.Run(fmt.Sprintf("forged=%v", forge), func(t *testing.T) {
			hs := p2ptest.Hosts(t, 2)
			src := held{Dicts: owner, release: make(chan struct{}), forge: forge}
			server := New(Config{Self: ring.Contact{Peer: hs[1].ID().String()}, Dicts: src})
			k := kit.New(kit.Config{Host: hs[1], Gate: func(s network.Stream) (ring.Node, error) {
				return ring.Node{Contact: ring.Contact{Peer: s.Conn().RemotePeer().String()}}, nil
			}})
			if err := k.Handle(server.DictSpec()); err != nil {
				t.Fatal(err)
			}
			client := New(Config{Self: ring.Contact{Peer: hs[0].ID().String()}, Open: p2ptest.Opener(hs[0])})
			replica, err := archive.Open(t.TempDir(), archive.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer replica.Close()
			c := ring.Contact{Peer: hs[1].ID().String()}
			errs := make([]error, 8)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					raw, err := client.fetchDict(ctx, c, ref)
					if err == nil {
						err = replica.AddDictionary(ref, raw)
					}
					errs[i] = err
				}()
			}
			tick := time.NewTicker(time.Millisecond)
			for client.waiters(ref) != len(errs)-1 { // all but the fetching one wait for it
				<-tick.C
			}
			tick.Stop()
			close(src.release)
			wg.Wait()
			// Asked again (a sync asks only for a dictionary its store
			// lacks): fetched again from an honest peer, not from a forger.
			_, again := client.fetchDict(ctx, c, ref)
			served, st := server.Stats().Dicts.Served, client.Stats().Dicts
			t.Logf("served %d, client %+v; %v", served, st, errs[0])
			for _, err := range errs {
				if forge != errors.Is(err, archive.ErrCorrupt) {
					t.Fatalf("fetch (forged %v): %v", forge, err)
				}
			}
			_, held := replica.Dictionary(ref)
			switch {
			case forge && (served != 1 || st.Refused != 1 || !errors.Is(again, archive.ErrCorrupt) || held == nil):
				t.Fatalf("forged: served %d, %+v, asked again: %v, held: %v", served, st, again, held)
			case !forge && (served != 2 || st.Fetched != 2 || held != nil):
				t.Fatalf("served %d times, %+v, held: %v", served, st, held)
			}
			missing := ref
			missing.Hash[0] ^= 1
			if _, err := client.fetchDict(ctx, c, missing); err == nil || errors.Is(err, archive.ErrCorrupt) {
				t.Fatalf("a dictionary the peer does not hold: %v", err)
			}
		})
	}
}
