package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/links"
	"github.com/herod-archive/herod/ring"
)

// readCounter is a links.Archive that counts the sources an Indexer
// reads (their version lists).
type readCounter struct {
	links.Archive
	mu   sync.Mutex
	read map[string]int
}

func (r *readCounter) Versions(ctx context.Context, u string) ([]archive.Version, error) {
	r.mu.Lock()
	r.read[u]++
	r.mu.Unlock()
	return r.Archive.Versions(ctx, u)
}

func (r *readCounter) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.read
	r.read = map[string]int{}
	return m
}

// putLinkPage stores a capture of u at at whose only link is to target.
func putLinkPage(ctx context.Context, t *testing.T, n *Node, u string, at time.Time, target string) {
	t.Helper()
	c := archive.Capture{URL: u, Time: at, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
		Body: []byte(`<a href="` + target + `">to ` + target + `</a>`)}
	if _, _, err := n.store.Put(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// putLinkPages stores pages captures ten minutes old, page(i) on one of
// 20 hosts linking to one of 50 targets, and returns page and their time.
func putLinkPages(ctx context.Context, t *testing.T, n *Node, pages int) (page func(int) string, t0 time.Time) {
	t.Helper()
	page = func(i int) string { return fmt.Sprintf("http://h%d.test/p%d", i%20, i) }
	t0 = time.Now().Add(-10 * time.Minute).UTC()
	for i := range pages {
		putLinkPage(ctx, t, n, page(i), t0, fmt.Sprintf("http://t%d.test/", i%50))
	}
	return page, t0
}

// sweepNode starts a node of a ring of one that sweeps its links only
// when told, with sweeps sweeps a crawl day, its sources' reads counted.
func sweepNode(ctx context.Context, t *testing.T, sweeps int) (*Node, *readCounter) {
	t.Helper()
	lr, err := StartLocalRing(ctx, t.TempDir(), 1, Config{StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: -1, LinkSweep: -1, DayLength: time.Duration(sweeps) * DefaultLinkSweep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lr.Close() })
	n := lr.Nodes[0]
	rc := &readCounter{Archive: n.linkIdx.indexer.Archive, read: map[string]int{}}
	n.linkIdx.indexer.Archive = rc
	return n, rc
}

// TestLinkSweepReadsChanges: after the first sweep (every source), a
// sweep reads the sources the crawl stored a version of and a slice of
// the slow pass, not the whole store; a change whose mark was lost is
// indexed by the slow pass within the sweeps of a day; a source whose
// delivery failed is read again by the next sweep.
func TestLinkSweepReadsChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("a real node in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const sweeps = 4 // slow-pass sweeps a day
	n, rc := sweepNode(ctx, t, sweeps)

	const pages = 600
	page, t0 := putLinkPages(ctx, t, n, pages)
	put := func(u string, at time.Time, target string) {
		t.Helper()
		putLinkPage(ctx, t, n, u, at, target)
	}
	sweep := func() map[string]int {
		t.Helper()
		if _, err := n.SweepLinks(ctx); err != nil {
			t.Fatal(err)
		}
		return rc.take()
	}
	linked := func(target, source string) bool {
		t.Helper()
		res, err := n.Links(ctx, target, time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(res.Records, func(r links.Record) bool { return r.Source == source })
	}
	if got := sweep(); len(got) != pages {
		t.Fatalf("first sweep read %d sources, want all %d", len(got), pages)
	}
	if !linked("http://t7.test/", page(7)) {
		t.Fatal("first sweep: a link is missing")
	}

	// A change whose mark is lost (as an imported version's), then one
	// marked by the crawl's Put.
	put(page(1), t0.Add(time.Minute), "http://lost.test/")
	n.linkIdx.dirty.Take()
	put(page(0), t0.Add(time.Minute), "http://new.test/")
	slice := max(pages*5/4/sweeps, minPassSlice)
	got := sweep()
	if got[page(0)] == 0 || !linked("http://new.test/", page(0)) {
		t.Fatal("a marked source was not read")
	}
	if len(got) > slice+1 || len(got) >= pages {
		t.Fatalf("a sweep after a change read %d sources, want at most %d", len(got), slice+1)
	}
	for i := 1; i <= sweeps && !linked("http://lost.test/", page(1)); i++ {
		if got := sweep(); len(got) > slice {
			t.Fatalf("sweep %d read %d sources, want at most %d", i, len(got), slice)
		}
	}
	if !linked("http://lost.test/", page(1)) {
		t.Fatalf("the slow pass did not read an unmarked change within %d sweeps", sweeps+1)
	}

	// A delivery that fails is read again by the next sweep.
	send := n.linkIdx.indexer.Send
	n.linkIdx.indexer.Send = func(context.Context, []links.Record) error { return errors.New("holders unreachable") }
	put(page(2), t0.Add(2*time.Minute), "http://retry.test/")
	if _, err := n.SweepLinks(ctx); err == nil {
		t.Fatal("a failed delivery was not reported")
	}
	rc.take()
	n.linkIdx.indexer.Send = send
	if got := sweep(); got[page(2)] == 0 || !linked("http://retry.test/", page(2)) {
		t.Fatal("a failed source was not read again")
	}
}

// TestLinkSweepSlowPassGrows: a store that grew after the last whole
// pass (a node that started empty) is walked within the sweeps of a
// day all the same: a slice is sized by the store's URLs now, not by
// the last pass's count.
func TestLinkSweepSlowPassGrows(t *testing.T) {
	if testing.Short() {
		t.Skip("a real node in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const sweeps = 4
	n, rc := sweepNode(ctx, t, sweeps)
	if _, err := n.SweepLinks(ctx); err != nil { // the first: every source of an empty store
		t.Fatal(err)
	}
	// More than sweeps slices of minPassSlice: the last pass's count (0)
	// would leave some unread within the day.
	const pages = sweeps*minPassSlice + 200
	at := time.Now().Add(-time.Minute).UTC()
	for i := range pages {
		u := fmt.Sprintf("http://h%d.test/p%d", i%20, i)
		c := archive.Capture{URL: u, Time: at, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
			Body: []byte(`<a href="http://t.test/">t</a>`)}
		if _, _, err := n.store.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	n.linkIdx.dirty.Take() // the marks lost: the slow pass alone reads them
	read := map[string]bool{}
	for range sweeps {
		if _, err := n.SweepLinks(ctx); err != nil {
			t.Fatal(err)
		}
		for u := range rc.take() {
			read[u] = true
		}
	}
	if len(read) != pages {
		t.Fatalf("%d sweeps read %d of the %d sources the store grew by", sweeps, len(read), pages)
	}
}

// BenchmarkLinkSweep: a revisit day's sweep, where 8% of the sources
// got a new version (the scale web's day: 5% changed, 2% new, 1%
// gone), against a sweep of as many new versions that looks at every
// source (a start, an overflow of the marks), and a sweep of every
// source when none changed. Metrics: milliseconds of the first two and
// their ratio; wall and CPU microseconds a source of the last, and of
// the first sweep (every source new, read once).
//
//	go test ./node -run '^$' -bench BenchmarkLinkSweep -benchtime 3x
func BenchmarkLinkSweep(b *testing.B) {
	ctx := context.Background()
	lr, err := StartLocalRing(ctx, b.TempDir(), 1, Config{StabilizeInterval: 100 * time.Millisecond,
		ReplicationInterval: -1, LinkSweep: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { lr.Close() }()
	n := lr.Nodes[0]
	const pages = 4000
	page := func(i int) string { return fmt.Sprintf("http://h%d.test/p%d", i%40, i) }
	t0 := time.Now().Add(-time.Hour).UTC()
	put := func(i int, at time.Time) {
		var body string
		for j := range 10 {
			body += fmt.Sprintf(`<a href="%s">link %d</a> `, page((i*7+j*13+int(at.Unix()))%pages), j)
		}
		c := archive.Capture{URL: page(i), Time: at, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)}
		if _, _, err := n.store.Put(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	for i := range pages {
		put(i, t0)
	}
	// The first sweep: every source new.
	start, cpu := time.Now(), processCPU()
	if _, err := n.SweepLinks(ctx); err != nil {
		b.Fatal(err)
	}
	first, firstCPU := time.Since(start), processCPU()-cpu
	var incr, full time.Duration
	b.ResetTimer()
	for k := range b.N {
		at := t0.Add(time.Duration(k+1) * time.Minute)
		b.StopTimer()
		for i := k; i < pages; i += 12 { // 8%
			put(i, at)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := n.SweepLinks(ctx); err != nil {
			b.Fatal(err)
		}
		incr += time.Since(start)
		b.StopTimer()
		for i := k; i < pages; i += 12 {
			put(i, at.Add(time.Second))
		}
		n.linkIdx.dirty.MarkAll() // as every sweep before the marks
		b.StartTimer()
		start = time.Now()
		if _, err := n.SweepLinks(ctx); err != nil {
			b.Fatal(err)
		}
		full += time.Since(start)
	}
	// A full sweep when nothing changed (a start, an overflow of the
	// marks): every source already delivered.
	var idle, idleCPU time.Duration
	for range b.N {
		n.linkIdx.dirty.MarkAll()
		start, cpu := time.Now(), processCPU()
		if _, err := n.SweepLinks(ctx); err != nil {
			b.Fatal(err)
		}
		idle += time.Since(start)
		idleCPU += processCPU() - cpu
	}
	b.ReportMetric(float64(idle.Microseconds())/float64(b.N*pages), "idle-full-µs/source")
	b.ReportMetric(float64(idleCPU.Microseconds())/float64(b.N*pages), "idle-full-cpu-µs/source")
	b.ReportMetric(float64(first.Microseconds())/pages, "first-µs/source")
	b.ReportMetric(float64(firstCPU.Microseconds())/pages, "first-cpu-µs/source")
	b.ReportMetric(float64(incr.Milliseconds())/float64(b.N), "incr-ms")
	b.ReportMetric(float64(full.Milliseconds())/float64(b.N), "full-ms")
	if incr > 0 {
		b.ReportMetric(float64(full)/float64(incr), "full/incr")
	}
}

// TestNewDrops: a subscription's dropped count only grows, so the sweep
// loop asks for a full sweep once per new drop, not on every sweep
// after the first drop.
func TestNewDrops(t *testing.T) {
	var seen uint64
	for i, c := range []struct {
		total uint64
		want  bool
	}{{0, false}, {0, false}, {3, true}, {3, false}, {3, false}, {5, true}, {5, false}} {
		if got := newDrops(c.total, &seen); got != c.want {
			t.Fatalf("step %d: total %d: newDrops %v, want %v", i, c.total, got, c.want)
		}
	}
}

// TestRangeGrew: the link sweep reads every source after a range grew
// (it took keys over), not after one only shrank (a node joined in front
// of it) or became unknown.
func TestRangeGrew(t *testing.T) {
	at := func(b byte) id.ID { return id.ID{b} }
	r := func(start, end byte) ring.Range { return ring.Range{Start: at(start), End: at(end), Known: true} }
	unknown := ring.Range{End: at(50)}
	for _, c := range []struct {
		name     string
		old, cur ring.Range
		want     bool
	}{
		{"same", r(10, 50), r(10, 50), false},
		{"grew", r(10, 50), r(5, 50), true},
		{"shrank", r(10, 50), r(20, 50), false},
		{"grew across zero", r(200, 50), r(150, 50), true},
		{"shrank across zero", r(200, 50), r(250, 50), false},
		{"shrank to past zero", r(200, 50), r(10, 50), false},
		{"to the whole circle", r(10, 50), r(50, 50), true},
		{"from the whole circle", r(50, 50), r(10, 50), false},
		{"became unknown", r(10, 50), unknown, false},
		{"became known", unknown, r(10, 50), true},
		{"another vnode's end", r(10, 50), r(10, 60), true},
	} {
		if got := rangeGrew(c.old, c.cur); got != c.want {
			t.Errorf("%s: rangeGrew(%v, %v) = %v, want %v", c.name, c.old, c.cur, got, c.want)
		}
	}
}

// TestLinkSweepFullSkipsDelivered: a sweep of every source, read a few
// stale sources at a time, reads only the stale ones: none when every source was delivered; one whose
// delivery failed (its mark lost too) or that was forgotten (its holders
// to be rebuilt); and, in a store written before read marks, every
// source once, sending nothing again, then none.
func TestLinkSweepFullSkipsDelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("a real node in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, rc := sweepNode(ctx, t, 4)
	n.linkIdx.chunk = 7 // full sweeps in many pieces
	const pages = 300
	page, t0 := putLinkPages(ctx, t, n, pages)
	put := func(u string, at time.Time, target string) {
		t.Helper()
		putLinkPage(ctx, t, n, u, at, target)
	}
	full := func() (map[string]int, int) {
		t.Helper()
		n.linkIdx.dirty.MarkAll()
		sent, err := n.SweepLinks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rc.take(), sent
	}
	if got, sent := full(); len(got) != pages || sent != pages {
		t.Fatalf("first sweep read %d sources and sent %d records, want %d and %d", len(got), sent, pages, pages)
	}
	before := n.LinkSweepStats()
	if got, _ := full(); len(got) != 0 {
		t.Fatalf("a full sweep with every source delivered read %d sources", len(got))
	}
	if st := n.LinkSweepStats(); st.Full != before.Full+1 || st.Skipped != before.Skipped+pages || st.Read != before.Read {
		t.Errorf("stats %+v after %+v: want one more full sweep, %d more skipped, none read", st, before, pages)
	}

	// A failed delivery whose dirty mark is lost: the full sweep reads it.
	send := n.linkIdx.indexer.Send
	n.linkIdx.indexer.Send = func(context.Context, []links.Record) error { return errors.New("holders unreachable") }
	put(page(3), t0.Add(time.Minute), "http://retry.test/")
	if _, err := n.SweepLinks(ctx); err == nil {
		t.Fatal("a failed delivery was not reported")
	}
	n.linkIdx.indexer.Send = send
	rc.take()
	n.linkIdx.dirty.Take()
	if got, _ := full(); len(got) != 1 || got[page(3)] == 0 {
		t.Fatalf("full sweep after a failed delivery read %v, want only %s", got, page(3))
	}
	if res, err := n.Links(ctx, "http://retry.test/", time.Time{}, 0); err != nil || len(res.Records) != 1 {
		t.Fatalf("the retried record: %v, %v", res.Records, err)
	}

	// A forgotten source is read from its first version.
	if err := n.linkIdx.indexer.Forget(page(5)); err != nil {
		t.Fatal(err)
	}
	if got, sent := full(); len(got) != 1 || got[page(5)] == 0 || sent != 1 {
		t.Fatalf("full sweep after Forget read %v and sent %d, want %s and 1", got, sent, page(5))
	}

	// A store without read marks (written before them).
	if err := n.linkIdx.index.DropReadMarks(); err != nil {
		t.Fatal(err)
	}
	if got, sent := full(); len(got) != pages || sent != 0 {
		t.Fatalf("full sweep without read marks read %d sources and sent %d records, want %d and 0", len(got), sent, pages)
	}
	if got, _ := full(); len(got) != 0 {
		t.Fatalf("the next full sweep read %d sources, want 0", len(got))
	}
}

// TestLinkSweepOnDemandWatchesRing: a node that sweeps only when asked
// (LinkSweep < 0) still watches the ring: once a range it owns grew
// (its neighbour left), its next sweep is one of every source.
func TestLinkSweepOnDemandWatchesRing(t *testing.T) {
	if testing.Short() {
		t.Skip("real nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lr := startLinkRingOf(ctx, t, 2, 0)
	n := lr.Nodes[0]
	// The first sweep after the start reads every source. (An event of
	// the ring's forming may still ask for another: only the ring's
	// events do.)
	if _, err := n.SweepLinks(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lr.Nodes[1].Close(); err != nil {
		t.Fatal(err)
	}
	for !n.linkIdx.dirty.Full() {
		select {
		case <-ctx.Done():
			t.Fatal("a range that grew did not ask for a full sweep")
		case <-time.After(20 * time.Millisecond): // polling the event loop's effect
		}
	}
	before := n.LinkSweepStats().Full
	if _, err := n.SweepLinks(ctx); err != nil {
		t.Fatal(err)
	}
	if got := n.LinkSweepStats().Full; got != before+1 {
		t.Fatalf("full sweeps %d, want %d", got, before+1)
	}
}

// TestLinkSweepOneAtATime: a sweep asked for while another runs (the
// node's loop and a caller's) waits for it, up to its context, and
// reads nothing meanwhile; once the other ends it reads what was marked.
func TestLinkSweepOneAtATime(t *testing.T) {
	if testing.Short() {
		t.Skip("a real node in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, rc := sweepNode(ctx, t, 4)
	if _, err := n.SweepLinks(ctx); err != nil { // the first: every source of an empty store
		t.Fatal(err)
	}
	page, _ := putLinkPages(ctx, t, n, 3)
	n.linkIdx.sweeping <- struct{}{} // another sweep runs
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if _, err := n.SweepLinks(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a sweep beside another = %v, want it to wait until its deadline", err)
	}
	if got := rc.take(); len(got) != 0 {
		t.Fatalf("a sweep beside another read %v", got)
	}
	<-n.linkIdx.sweeping // the other ends
	if _, err := n.SweepLinks(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rc.take(); got[page(0)] == 0 {
		t.Fatalf("the sweep after the other read %v, want %s", got, page(0))
	}
}
