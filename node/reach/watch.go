package reach

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
)

// checkEvery is how often WatchMapped compares the router's public
// address with the ring address, besides on every change of the host's
// addresses (libp2p refreshes the router's external address every 15 s).
const checkEvery = 10 * time.Second

// WatchMapped waits until h's router maps it a public address other than
// current while current is no longer among h's addresses (a home
// connection's IP changed), and returns the new address. It returns an
// error when ctx ends first or h's events cannot be watched.
func WatchMapped(ctx context.Context, h host.Host, current string) (string, error) {
	sub, err := h.EventBus().Subscribe(new(event.EvtLocalAddressesUpdated))
	if err != nil {
		return "", fmt.Errorf("reach: watch the public address: %w", err)
	}
	defer sub.Close()
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-sub.Out():
		case <-tick.C:
		}
		addr, how, ok := PublicAddr(h)
		if !ok || how != Mapped || addr == current {
			continue
		}
		if old, _ := netip.ParseAddrPort(current); HasAddr(h, old) {
			continue // the old mapping still stands: another mapping was added
		}
		return addr, nil
	}
}
