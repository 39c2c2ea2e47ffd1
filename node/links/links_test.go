package links

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/memarchive"
)

// twoDays is a sample web of five pages over two crawl days, with known
// links and anchors: on day 2 page a drops its link to c and gains one
// to e, and c gains a link back to a; b does not change.
var twoDays = []struct {
	day  int
	url  string
	body string
}{
	{1, "http://a.test/", `<base href="http://a.test/dir/"><a href="/b">Bee   page</a> <a href="http://c.test/">See <b>C</b></a> <a href="/d"><img src=x.png alt="Dee logo"></a> <a href="#top">top</a>`},
	{1, "http://b.test/", `<a href="http://a.test/">Home</a><a href="http://c.test/">C again</a><img src="http://c.test/pic.png">`},
	{1, "http://c.test/", `<p>no links</p>`},
	{2, "http://a.test/", `<a href="http://a.test/b">Bee page</a><a href="http://a.test/d"><img alt="Dee logo"></a><a href="http://e.test/">Eee</a>`},
	{2, "http://c.test/", `<map><area href="http://a.test/" alt="back home"></map>`},
}

func dayTime(d int) time.Time { return time.Date(2026, 1, d, 10, 0, 0, 0, time.UTC) }

// endOf is the last instant of day d.
func endOf(d int) time.Time {
	return time.Date(2026, 1, d+1, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond)
}

// owners partitions targets over n indexes by their key, as a ring
// would, and returns the indexes and a Send that delivers to them.
func owners(t *testing.T, n int) ([]*Index, func(string) *Index, Send) {
	t.Helper()
	xs := make([]*Index, n)
	for i := range xs {
		x, err := Open(t.TempDir(), Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		xs[i] = x
	}
	owner := func(u string) *Index { k := id.OfString(u); return xs[int(k[0])%n] }
	send := func(ctx context.Context, recs []Record) error {
		// through the wire format, as the ring sends them
		by := map[*Index][]Record{}
		for _, r := range recs {
			by[owner(r.Target)] = append(by[owner(r.Target)], r)
		}
		for x, rs := range by {
			got, err := DecodeRecords(EncodeRecords(rs), len(rs))
			if err != nil {
				return err
			}
			if _, err := x.Put(ctx, got); err != nil {
				return err
			}
		}
		return nil
	}
	return xs, owner, send
}

func crawlDay(t *testing.T, m *memarchive.Mem, d int) []string {
	t.Helper()
	var srcs []string
	for _, p := range twoDays {
		if p.day != d {
			continue
		}
		h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
		if err := m.Add(context.Background(), &archive.Capture{URL: p.url, Time: dayTime(d), Status: 200, Header: h, Body: []byte(p.body)}); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, p.url)
	}
	return srcs
}

// summary renders the links to target live at at as "source|anchor"
// lines, sorted.
func summary(t *testing.T, x *Index, target string, at time.Time, keep Filter) []string {
	t.Helper()
	res, err := x.Links(context.Background(), target, at, 0, keep)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, r := range res.Records {
		out = append(out, r.Source+"|"+r.Anchor)
	}
	return out
}

var wantDays = map[int]map[string][]string{
	1: {
		"http://a.test/":        {"http://b.test/|Home"},
		"http://a.test/b":       {"http://a.test/|Bee page"},
		"http://c.test/":        {"http://a.test/|See C", "http://b.test/|C again"},
		"http://a.test/d":       {"http://a.test/|Dee logo"},
		"http://e.test/":        {},
		"http://c.test/pic.png": {}, // a requisite, not a link
		"http://a.test/dir/":    {},
	},
	2: {
		"http://a.test/":        {"http://b.test/|Home", "http://c.test/|back home"},
		"http://a.test/b":       {"http://a.test/|Bee page"},
		"http://c.test/":        {"http://b.test/|C again"},
		"http://a.test/d":       {"http://a.test/|Dee logo"},
		"http://e.test/":        {"http://a.test/|Eee"},
		"http://c.test/pic.png": {},
	},
}

func checkDays(t *testing.T, owner func(string) *Index, days ...int) {
	t.Helper()
	for _, d := range days {
		for target, want := range wantDays[d] {
			if got := summary(t, owner(target), target, endOf(d), nil); !slices.Equal(got, want) {
				t.Errorf("day %d: links to %s = %q, want %q", d, target, got, want)
			}
		}
	}
}

func TestLinksExactTwoDays(t *testing.T) {
	ctx := context.Background()
	m := memarchive.New()
	xs, owner, send := owners(t, 3)
	ix := &Indexer{Index: xs[0], Archive: m, Send: send}
	sync := func(srcs []string) {
		for _, s := range srcs {
			if _, err := ix.Sync(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	sync(crawlDay(t, m, 1))
	checkDays(t, owner, 1)
	sync(crawlDay(t, m, 2))
	checkDays(t, owner, 1, 2)

	// The removed link's range ends at the version that lacks it.
	res, err := owner("http://c.test/").Links(ctx, "http://c.test/", time.Time{}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ac Record
	for _, r := range res.Records {
		if r.Source == "http://a.test/" {
			ac = r
		}
	}
	if !ac.From.Equal(dayTime(1)) || !ac.Until.Equal(dayTime(2)) {
		t.Errorf("a→c spans %v–%v, want %v–%v", ac.From, ac.Until, dayTime(1), dayTime(2))
	}
	// A second Sync with nothing new sends nothing.
	if n, err := ix.Sync(ctx, "http://a.test/"); err != nil || n != 0 {
		t.Errorf("idle sync sent %d records, err %v", n, err)
	}
}

// TestLinksRebuild: a new owner of the sources (no indexer state) reads
// them from their first version and sends the same records again; the
// holders end exactly where they were.
func TestLinksRebuild(t *testing.T) {
	ctx := context.Background()
	m := memarchive.New()
	xs, owner, send := owners(t, 2)
	crawlDay(t, m, 1)
	crawlDay(t, m, 2)
	srcs := []string{"http://a.test/", "http://b.test/", "http://c.test/"}
	first := &Indexer{Index: xs[0], Archive: m, Send: send}
	for _, s := range srcs {
		if _, err := first.Sync(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	checkDays(t, owner, 1, 2)
	other := &Indexer{Index: xs[1], Archive: m, Send: send}
	for _, s := range srcs {
		if n, err := other.Sync(ctx, s); err != nil || n == 0 {
			t.Fatalf("rebuild of %s sent %d, err %v", s, n, err)
		}
	}
	checkDays(t, owner, 1, 2)
}

func TestLinksFilterAndCap(t *testing.T) {
	ctx := context.Background()
	x, err := Open(t.TempDir(), Config{PerTarget: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var recs []Record
	for i := range 4 {
		recs = append(recs, Record{Target: "http://t.test/", Source: fmt.Sprintf("http://s%d.test/", i), From: dayTime(1), Seen: dayTime(1)})
	}
	if _, err := x.Put(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// the same records again change no count
	if _, err := x.Put(ctx, recs[:2]); err != nil {
		t.Fatal(err)
	}
	hide := func(src string, _ time.Time) bool { return src != "http://s0.test/" }
	res, err := x.Links(ctx, "http://t.test/", time.Time{}, 0, hide)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 || res.Records[0].Source != "http://s1.test/" || res.More != 2 || res.Hidden != 1 {
		t.Errorf("got %+v, want s1 only, 2 more, 1 hidden", res)
	}
	// an older copy of a record does not replace a newer one
	closed := recs[1]
	closed.Until, closed.Seen = dayTime(2), dayTime(2)
	stale := recs[1]
	if _, err := x.Put(ctx, []Record{closed}); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Put(ctx, []Record{stale}); err != nil {
		t.Fatal(err)
	}
	if got := summary(t, x, "http://t.test/", endOf(2), nil); len(got) != 1 || got[0] != "http://s0.test/|" {
		t.Errorf("day 2 links = %q, want s0 only", got)
	}
}

func TestRecordCheck(t *testing.T) {
	ok := Record{Target: "http://t.test/", Source: "http://s.test/", Anchor: "x y", From: dayTime(1), Seen: dayTime(2), Until: dayTime(2)}
	bad := map[string]func(*Record){
		"target":  func(r *Record) { r.Target = "HTTP://T.test" },
		"source":  func(r *Record) { r.Source = "ftp://x/" },
		"anchor":  func(r *Record) { r.Anchor = " x  y" },
		"no from": func(r *Record) { r.From = time.Time{} },
		"until":   func(r *Record) { r.Until = dayTime(1) },
		"seen":    func(r *Record) { r.Seen = dayTime(1); r.Until = time.Time{}; r.From = dayTime(2) },
		"long":    func(r *Record) { r.Anchor = strings.Repeat("a", MaxAnchor+1) },
	}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, f := range bad {
		r := ok
		f(&r)
		if r.Check() == nil {
			t.Errorf("%s: accepted %+v", name, r)
		}
	}
}

func TestDecodeRecordsBounds(t *testing.T) {
	recs := []Record{{Target: "http://t.test/", Source: "http://s.test/", From: dayTime(1), Seen: dayTime(1)}}
	b := EncodeRecords(recs)
	for _, n := range []int{-1, 0, 2, MaxBatch + 1} {
		if _, err := DecodeRecords(b, n); err == nil {
			t.Errorf("n=%d accepted", n)
		}
	}
	if _, err := DecodeRecords([]byte("not zstd"), 1); err == nil {
		t.Error("garbage accepted")
	}
}

func FuzzDecodeRecords(f *testing.F) {
	f.Add(EncodeRecords([]Record{{Target: "http://t.test/", Source: "http://s.test/", From: dayTime(1), Seen: dayTime(1)}}), 1)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		recs, err := DecodeRecords(b, n)
		if err == nil && len(recs) != n {
			t.Fatalf("%d records for n=%d", len(recs), n)
		}
	})
}

// TestLinksSyncAll: sources synced together; a failed send keeps every
// source's state, so the next SyncAll sends the same records, and the
// holders end exact.
func TestLinksSyncAll(t *testing.T) {
	ctx := context.Background()
	m := memarchive.New()
	xs, owner, send := owners(t, 3)
	srcs := []string{"http://a.test/", "http://b.test/", "http://c.test/"}
	down := true
	ix := &Indexer{Index: xs[0], Archive: m, Send: func(ctx context.Context, recs []Record) error {
		if down {
			return errors.New("holders unreachable")
		}
		return send(ctx, recs)
	}}
	crawlDay(t, m, 1)
	if sent, failed, err := ix.SyncAll(ctx, srcs); err == nil || len(failed) != 3 || sent != 0 {
		t.Fatalf("send down: sent %d, failed %q, err %v; want all 3 failed (their batch was not delivered)", sent, failed, err)
	}
	down = false
	if _, failed, err := ix.SyncAll(ctx, srcs); err != nil || len(failed) != 0 {
		t.Fatalf("failed %q, err %v", failed, err)
	}
	crawlDay(t, m, 2)
	if _, _, err := ix.SyncAll(ctx, srcs); err != nil {
		t.Fatal(err)
	}
	checkDays(t, owner, 1, 2)
}

// TestPutRefusesFutureSeen: a copy dated past the holder's clock (and
// the skew archive allows) would outrank every later true copy; Put
// refuses its batch and keeps what it held.
func TestPutRefusesFutureSeen(t *testing.T) {
	ctx := context.Background()
	now := dayTime(3)
	x, err := Open(t.TempDir(), Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r := Record{Target: "http://t.test/", Source: "http://s.test/", Anchor: "true", From: dayTime(1), Seen: dayTime(1)}
	if _, err := x.Put(ctx, []Record{r}); err != nil {
		t.Fatal(err)
	}
	late := r
	late.Anchor, late.Seen = "forged", now.Add(archive.MaxClockSkew+time.Second)
	if _, err := x.Put(ctx, []Record{late}); err == nil {
		t.Error("a record seen in the future was taken")
	}
	skewed := r
	skewed.Anchor, skewed.Seen = "skewed", now.Add(archive.MaxClockSkew)
	if _, err := x.Put(ctx, []Record{skewed}); err != nil {
		t.Errorf("a record within the clock skew was refused: %v", err)
	}
	if got := summary(t, x, "http://t.test/", time.Time{}, nil); !slices.Equal(got, []string{"http://s.test/|skewed"}) {
		t.Errorf("held %q", got)
	}
}
