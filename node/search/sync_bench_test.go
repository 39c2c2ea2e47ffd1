package search

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/p2ptest"
	fts "github.com/herod-archive/herod/search"
)

// BenchmarkSyncCatchUp: a fresh holder pulls a range of 50,000 postings
// from its other holder (mocknet: in-memory streams, real stores), then
// the two compare the range in sync. Reports the catch-up time, its
// bytes a posting, and the bytes and time of an in-sync comparison, in
// wall time and in the CPU time of the process (both sides: the figure
// to trust on a loaded machine).
//
//	go test -run - -bench BenchmarkSyncCatchUp -benchtime 1x ./node/search/
func BenchmarkSyncCatchUp(b *testing.B) {
	const n = 50_000
	for range b.N {
		w := &world{}
		ns := syncRing(b, w, p2ptest.Hosts(b, 2), 2)
		for _, sn := range ns {
			w.add(sn.v)
		}
		have, fresh := ns[0], ns[1]
		r := KeyRange{From: have.v.ID, To: fresh.v.ID}
		var ps []fts.Posting
		for i := 0; len(ps) < n; i++ {
			term := fmt.Sprintf("w%d", i/8)
			if !r.Has(fts.TermKey(term)) {
				i += 7
				continue
			}
			u := fmt.Sprintf("http://h%d.example/page/%d", i%13, i)
			ps = append(ps, fts.Posting{Term: term, Key: id.OfString(u), URL: u, From: 1_700_000_000_000,
				To: fts.Open, TF: uint32(1 + i%3), DocLen: 300})
		}
		ctx := context.Background()
		for len(ps) > 0 {
			m := min(len(ps), 10_000)
			if err := have.sv.Store.Put(ctx, ps[:m]); err != nil {
				b.Fatal(err)
			}
			ps = ps[m:]
		}
		start, cpu := time.Now(), cpuTime()
		if _, err := fresh.sv.pullRange(ctx, have.v.Contact, r); err != nil {
			b.Fatal(err)
		}
		took, tookCPU := time.Since(start), cpuTime()-cpu
		st := fresh.sv.SyncStats()
		if st.Pulled != n {
			b.Fatalf("pulled %d postings, want %d", st.Pulled, n)
		}
		start, cpu = time.Now(), cpuTime()
		equal, err := fresh.sv.pullRange(ctx, have.v.Contact, r)
		if err != nil || !equal {
			b.Fatalf("in sync: equal %v, %v", equal, err)
		}
		inSync, inSyncCPU := time.Since(start), cpuTime()-cpu
		b.ReportMetric(took.Seconds(), "s-catchup")
		b.ReportMetric(float64(n)/took.Seconds(), "postings/s")
		b.ReportMetric(float64(st.Bytes)/n, "B/posting")
		b.ReportMetric(float64(fresh.sv.SyncStats().Bytes-st.Bytes), "B-insync")
		b.ReportMetric(float64(inSync.Milliseconds()), "ms-insync")
		b.ReportMetric(tookCPU.Seconds(), "cpu-s-catchup")
		b.ReportMetric(float64(inSyncCPU.Milliseconds()), "cpu-ms-insync")
	}
}

// cpuTime returns the CPU time the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
