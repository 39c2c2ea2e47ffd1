package p2p_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/testwait"
	"github.com/herod-archive/herod/ring"
	"github.com/herod-archive/herod/ring/p2p"
)

func TestDHTBootstrapAndResolve(t *testing.T) {
	if testing.Short() {
		t.Skip("real hosts")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var hosts []*struct {
		c ring.Contact
		d *p2p.DHT
	}
	for i := range 4 {
		h := newHost(t)
		c, err := p2p.ContactOf(h)
		if err != nil {
			t.Fatal(err)
		}
		var boot []ring.Contact
		if i > 0 {
			boot = []ring.Contact{hosts[0].c} // everyone knows only the first
		}
		d, err := p2p.NewDHT(ctx, h, boot)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		hosts = append(hosts, &struct {
			c ring.Contact
			d *p2p.DHT
		}{c, d})
	}
	for _, x := range hosts[1:] {
		if err := x.d.Refresh(ctx); err != nil {
			t.Logf("refresh: %v", err)
		}
	}
	// Node 3 finds node 1 without having been told about it.
	testwait.For(t, "resolve through the DHT", 20*time.Second, func() error {
		got, err := hosts[3].d.Resolve(ctx, hosts[1].c.Peer)
		if err != nil {
			return err
		}
		if got != hosts[1].c {
			return errors.New("resolved " + got.String() + ", want " + hosts[1].c.String())
		}
		return nil
	})
	if len(hosts[3].d.Peers()) == 0 {
		t.Fatal("no DHT peers learned")
	}
	if _, err := p2p.NewDHT(ctx, newHost(t), []ring.Contact{{Peer: hosts[1].c.Peer, Addr: "127.0.0.1:1"}}); err == nil {
		t.Fatal("bootstrap through a dead address succeeded")
	}
}

// TestLateDHT: before Start a LateDHT resolves nothing and knows no
// peers; a bootstrap member that does not answer leaves it running
// without one.
func TestLateDHT(t *testing.T) {
	if testing.Short() {
		t.Skip("real hosts")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var l p2p.LateDHT
	if _, err := l.Resolve(ctx, "x"); !errors.Is(err, p2p.ErrNoDHT) {
		t.Fatalf("Resolve before Start: %v, want ErrNoDHT", err)
	}
	if l.Peers() != nil || l.Close() != nil {
		t.Fatal("a LateDHT not started has peers or fails to close")
	}
	gone := newHost(t)
	c, err := p2p.ContactOf(gone)
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	l.Start(ctx, newHost(t), []ring.Contact{c}, slog.New(slog.DiscardHandler))
	if _, err := l.Resolve(ctx, c.Peer); errors.Is(err, p2p.ErrNoDHT) {
		t.Fatal("the DHT did not start without its bootstrap member")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
