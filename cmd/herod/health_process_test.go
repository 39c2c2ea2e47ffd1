package main

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/sampleweb"
	"github.com/herod-archive/herod/node"
)

func TestProcessDeadNodeShows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs herod processes")
	}
	ctx := context.Background()
	web := sampleweb.New(sampleweb.Config{Hosts: 2, Pages: 20})
	if err := web.Start(ctx); err != nil {
		t.Skipf("sample web cannot listen on 127.0.0.2-3: %v", err)
	}
	defer web.Close()
	r := newProcRing(t, time.Hour)
	r.env = []string{"HEROD_VNODES=2"}
	first := r.start(nil, "")
	second := r.start(nil, first.multiaddr)
	third := r.start(nil, first.multiaddr)
	_ = second
	time.Sleep(2 * time.Second)
	seed := exec.Command(r.bin, append([]string{"seed", "--data", first.data}, web.Seeds()...)...)
	if out, err := seed.CombinedOutput(); err != nil {
		t.Fatalf("herod seed: %v\n%s", err, out)
	}
	want := len(web.Reachable(0))
	waitFor(t, "the crawl", time.Minute, func() bool { return r.versions() >= int64(want) })
	since := time.Now()
	waitFor(t, "k copies", time.Minute, func() bool { return r.replicatedSince(since) })
	r.remove(third, syscall.SIGKILL)
	killed := time.Now()
	for time.Since(killed) < 40*time.Second {
		var st node.Status
		var rv gateway.RingView
		getInto(first, "/api/status", &st)
		getInto(first, "/ring?format=json", &rv)
		t.Logf("%4.1fs health %+v suspects %v", time.Since(killed).Seconds(), st.Replication.Health, st.Ring.Suspects)
		for _, p := range rv.Peers {
			t.Logf("   %s %s below_k %d", p.Addr, p.State, p.BelowK)
		}
		time.Sleep(2 * time.Second)
	}
}
