package links

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/memarchive"
)

// countingReader is a Reader over a memarchive that counts reads and
// the most reads in flight at once; with block set, a read waits for its
// context to end.
type countingReader struct {
	m              *memarchive.Mem
	block          bool
	reads          atomic.Int64
	inflight, most atomic.Int64
}

func (r *countingReader) Get(ctx context.Context, u string, t time.Time) (archive.Version, *archive.Capture, error) {
	r.reads.Add(1)
	n := r.inflight.Add(1)
	defer r.inflight.Add(-1)
	for {
		m := r.most.Load()
		if n <= m || r.most.CompareAndSwap(m, n) {
			break
		}
	}
	if r.block {
		<-ctx.Done()
		return archive.Version{}, nil, ctx.Err()
	}
	return r.m.Get(ctx, u, t)
}

// verifyWeb is twoDays plus x.test, whose link to e.test changes its
// text on day 2 and ends on day 3, and the true records an Indexer made
// of it, by target.
func verifyWeb(t *testing.T) (*memarchive.Mem, map[string][]Record) {
	t.Helper()
	ctx := context.Background()
	m := memarchive.New()
	crawlDay(t, m, 1)
	crawlDay(t, m, 2)
	for d, body := range map[int]string{1: `<a href="http://e.test/">old text</a>`, 2: `<a href="http://e.test/">new text</a>`, 3: `<p>gone</p>`} {
		c := &archive.Capture{URL: "http://x.test/", Time: dayTime(d), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)}
		if err := m.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	x, err := Open(t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	by := map[string][]Record{}
	ix := &Indexer{Index: x, Archive: m, Send: func(_ context.Context, recs []Record) error {
		for _, r := range recs {
			by[r.Target] = append(by[r.Target], r)
		}
		return nil
	}}
	if _, _, err := ix.SyncAll(ctx, []string{"http://a.test/", "http://b.test/", "http://c.test/", "http://x.test/"}); err != nil {
		t.Fatal(err)
	}
	// The last copy of a record (the latest Seen) is the one holders keep.
	out := map[string][]Record{}
	for target, rs := range by {
		out[target] = Merge(Result{Target: target, Records: rs}).Records
	}
	return m, out
}

func sources(rs []Record) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Source+"|"+r.Anchor)
	}
	return out
}

// TestVerifyKeepsTrueDropsForged: every record the Indexer made passes,
// at any time and as of each day; records a lying peer made up are not
// shown — a link the source never carried, a true link with another
// text, a true link stretched past its end, a capture that does not
// exist, a source the archive does not hold.
func TestVerifyKeepsTrueDropsForged(t *testing.T) {
	ctx := context.Background()
	m, truth := verifyWeb(t)
	r := &countingReader{m: m}
	vf := &Verifier{}
	for target, rs := range truth {
		for _, at := range []time.Time{{}, endOf(1), endOf(2), endOf(3)} {
			live := Select(Result{Records: rs}, at, 0).Records
			got := vf.Verify(ctx, r, live, at)
			if !slices.Equal(sources(got.Records), sources(live)) || got.Dropped+got.Unchecked != 0 {
				t.Errorf("links to %s at %v: kept %q of %q (dropped %d, unchecked %d)", target, at,
					sources(got.Records), sources(live), got.Dropped, got.Unchecked)
			}
		}
	}
	// x.test's record shows its newest text, checked at Seen and, once
	// ended, at the capture before Until.
	if rs := truth["http://e.test/"]; !slices.ContainsFunc(rs, func(r Record) bool {
		return r.Source == "http://x.test/" && r.Anchor == "new text" && r.Until.Equal(dayTime(3))
	}) {
		t.Fatalf("records to e.test: %+v", rs)
	}

	forged := []struct {
		name string
		rec  Record
		at   time.Time
		want verdict
	}{
		{"a link b never carried", Record{Target: "http://e.test/", Source: "http://b.test/", Anchor: "Home", From: dayTime(1), Seen: dayTime(1)}, time.Time{}, dropped},
		{"a true link, another text", Record{Target: "http://c.test/", Source: "http://a.test/", Anchor: "Buy pills", From: dayTime(1), Until: dayTime(2), Seen: dayTime(2)}, time.Time{}, dropped},
		{"a true link, another text at a capture that does not exist", Record{Target: "http://c.test/", Source: "http://b.test/", Anchor: "Buy pills", From: dayTime(1), Seen: dayTime(2)}, endOf(2), unchecked},
		{"an ended link said open", Record{Target: "http://c.test/", Source: "http://a.test/", Anchor: "See C", From: dayTime(1), Seen: dayTime(2)}, endOf(2), dropped},
		{"a capture that does not exist", Record{Target: "http://c.test/", Source: "http://a.test/", Anchor: "See C", From: dayTime(1).Add(time.Hour), Seen: dayTime(1).Add(time.Hour)}, time.Time{}, unchecked},
		{"a source not archived", Record{Target: "http://c.test/", Source: "http://z.test/", Anchor: "Zed", From: dayTime(1), Seen: dayTime(1)}, time.Time{}, unchecked},
	}
	before := vf.Stats()
	for _, f := range forged {
		got := vf.Verify(ctx, r, []Record{f.rec}, f.at)
		if len(got.Records) != 0 || (f.want == dropped) != (got.Dropped == 1) || (f.want == unchecked) != (got.Unchecked == 1) {
			t.Errorf("%s: kept %d, dropped %d, unchecked %d", f.name, len(got.Records), got.Dropped, got.Unchecked)
		}
	}
	// Mixed with true records, order is kept and each is counted.
	mixed := append(slices.Clone(truth["http://c.test/"]), forged[0].rec, forged[1].rec)
	got := vf.Verify(ctx, r, mixed, time.Time{})
	if !slices.Equal(sources(got.Records), sources(truth["http://c.test/"])) || got.Dropped != 2 {
		t.Errorf("mixed: kept %q, dropped %d", sources(got.Records), got.Dropped)
	}
	st := vf.Stats()
	if st.Dropped-before.Dropped != 5 || st.Unchecked-before.Unchecked != 3 {
		t.Errorf("stats %+v, before %+v", st, before)
	}
}

// TestVerifyCache: a list checked twice costs its reads once; a fact is
// read again after TTL; the cache holds at most Cache facts.
func TestVerifyCache(t *testing.T) {
	ctx := context.Background()
	m, truth := verifyWeb(t)
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := &countingReader{m: m}
	vf := &Verifier{Now: clock, TTL: time.Minute}
	rs := truth["http://a.test/"]
	vf.Verify(ctx, r, rs, endOf(2))
	first := r.reads.Load()
	if first == 0 {
		t.Fatal("no capture read")
	}
	if got := vf.Verify(ctx, r, rs, endOf(2)); len(got.Records) != len(rs) || r.reads.Load() != first {
		t.Errorf("second check: %d records, %d reads (first %d)", len(got.Records), r.reads.Load(), first)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	vf.Verify(ctx, r, rs, endOf(2))
	if r.reads.Load() != 2*first {
		t.Errorf("after TTL: %d reads, want %d", r.reads.Load(), 2*first)
	}

	small := &Verifier{Cache: 2}
	var all []Record
	for _, rs := range truth {
		all = append(all, rs...)
	}
	small.Verify(ctx, r, all, time.Time{})
	if n := small.cacheLen(); n != 2 {
		t.Errorf("cache of 2 holds %d facts", n)
	}
}

// TestVerifyBounds: reads run at most Parallel at once, and a Verify
// whose reads do not answer ends at Timeout with every record unchecked.
func TestVerifyBounds(t *testing.T) {
	ctx := context.Background()
	m, truth := verifyWeb(t)
	var all []Record
	for _, rs := range truth {
		all = append(all, rs...)
	}
	r := &countingReader{m: m}
	(&Verifier{Parallel: 2}).Verify(ctx, r, all, time.Time{})
	if most := r.most.Load(); most > 2 || most == 0 {
		t.Errorf("%d reads at once, want at most 2", most)
	}
	stuck := &countingReader{m: m, block: true}
	vf := &Verifier{Parallel: 3, Timeout: 50 * time.Millisecond}
	got := vf.Verify(ctx, stuck, all, time.Time{})
	if len(got.Records) != 0 || got.Unchecked != len(all) || stuck.reads.Load() > 3 {
		t.Errorf("stuck reads: kept %d, unchecked %d of %d, %d reads", len(got.Records), got.Unchecked, len(all), stuck.reads.Load())
	}
	if vf.cacheLen() != 0 {
		t.Error("a failed read was cached")
	}
}

// BenchmarkVerify checks a list of records whose sources are pages of
// about 12 KB with 100 links each: cold (a new Verifier each time: one
// capture read and parse per record) and warm (the same Verifier: every
// fact cached). Per record: ns/op ÷ records, and reads.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	m := memarchive.New()
	const target = "http://t.test/"
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var recs []Record
	for i := range 50 {
		src := fmt.Sprintf("http://s%02d.test/", i)
		var body strings.Builder
		body.WriteString("<html><body><p>" + strings.Repeat("Some words of text. ", 200) + "</p>")
		for j := range 99 {
			fmt.Fprintf(&body, `<a href="/page/%d">page number %d</a> `, j, j)
		}
		body.WriteString(`<a href="http://t.test/">the target</a></body></html>`)
		c := &archive.Capture{URL: src, Time: at, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body.String())}
		if err := m.Add(ctx, c); err != nil {
			b.Fatal(err)
		}
		recs = append(recs, Record{Target: target, Source: src, Anchor: "the target", From: at, Seen: at})
	}
	r := &countingReader{m: m}
	for _, n := range []int{10, 50} {
		b.Run(fmt.Sprintf("cold/%d", n), func(b *testing.B) {
			r.reads.Store(0)
			for b.Loop() {
				if got := (&Verifier{}).Verify(ctx, r, recs[:n], at); len(got.Records) != n {
					b.Fatalf("kept %d of %d", len(got.Records), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e3, "µs/record")
			b.ReportMetric(float64(r.reads.Load())/float64(b.N*n), "reads/record")
		})
		b.Run(fmt.Sprintf("warm/%d", n), func(b *testing.B) {
			vf := &Verifier{}
			vf.Verify(ctx, r, recs[:n], at)
			r.reads.Store(0)
			for b.Loop() {
				if got := vf.Verify(ctx, r, recs[:n], at); len(got.Records) != n {
					b.Fatalf("kept %d of %d", len(got.Records), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e3, "µs/record")
			b.ReportMetric(float64(r.reads.Load())/float64(b.N*n), "reads/record")
		})
	}
}

// gatedReader is a Reader whose reads wait for gate to close.
type gatedReader struct {
	m     *memarchive.Mem
	gate  chan struct{}
	reads atomic.Int64
}

func (r *gatedReader) Get(ctx context.Context, u string, t time.Time) (archive.Version, *archive.Capture, error) {
	r.reads.Add(1)
	select {
	case <-r.gate:
	case <-ctx.Done():
		return archive.Version{}, nil, ctx.Err()
	}
	return r.m.Get(ctx, u, t)
}

// TestVerifySharedReads: two lists checked at once that need the same
// capture read it once; the second waits for the first's read.
func TestVerifySharedReads(t *testing.T) {
	m, truth := verifyWeb(t)
	rs := truth["http://a.test/b"] // one record, one fact
	if len(rs) != 1 {
		t.Fatalf("records to a.test/b: %+v", rs)
	}
	synctest.Test(t, func(t *testing.T) {
		r := &gatedReader{m: m, gate: make(chan struct{})}
		vf := &Verifier{}
		var wg sync.WaitGroup
		got := make([]Checked, 2)
		for i := range got {
			wg.Go(func() { got[i] = vf.Verify(context.Background(), r, rs, time.Time{}) })
		}
		synctest.Wait() // one read waits at the gate, the other check for it
		close(r.gate)
		wg.Wait()
		for i, g := range got {
			if len(g.Records) != 1 {
				t.Errorf("check %d: %+v", i, g)
			}
		}
		if n := r.reads.Load(); n != 1 {
			t.Errorf("%d reads of one capture, want 1", n)
		}
	})
}
