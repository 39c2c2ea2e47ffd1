package links

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// putModel is what Put's contract says the index holds, kept in maps:
// the records by key, the records kept and refused per target.
type putModel struct {
	cap  int
	recs map[string]Record
	kept map[string]int
	more map[string]int
}

// put applies one batch as the contract says: copies of one record in
// the batch reduced to the latest Seen (the later of equals), then, in
// the batch's order, a held record replaced by a copy not older, a new
// one kept under the cap and counted over it.
func (m *putModel) put(recs []Record) {
	final := map[string]Record{}
	var order []string
	for _, r := range recs {
		k := string(linkKey(r))
		old, ok := final[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || !r.Seen.Before(old.Seen) {
			final[k] = r
		}
	}
	for _, k := range order {
		r := final[k]
		if old, ok := m.recs[k]; ok {
			if !r.Seen.Before(old.Seen) {
				m.recs[k] = r
			}
			continue
		}
		if m.kept[r.Target] >= m.cap {
			m.more[r.Target]++
			continue
		}
		m.kept[r.Target]++
		m.recs[k] = r
	}
}

// TestPutModel: random batches of records to a few targets, from a few
// sources, with repeated keys, older and newer copies, in-batch copies
// and targets filled past their cap, leave the index answering what the
// contract (putModel) says, after every batch; halfway the index is
// closed and opened again (its bound of held records counted anew).
// Targets are read by key while their bound leaves room under the cap,
// walked after (both ways are taken: the test checks).
func TestPutModel(t *testing.T) {
	ctx := context.Background()
	const perTarget = 6
	dir := t.TempDir()
	open := func() *Index {
		x, err := Open(dir, Config{PerTarget: perTarget})
		if err != nil {
			t.Fatal(err)
		}
		<-x.counted
		if x.held == nil {
			t.Fatal("no bound of held records after the count")
		}
		return x
	}
	x := open()
	defer func() { x.Close() }()
	m := &putModel{cap: perTarget, recs: map[string]Record{}, kept: map[string]int{}, more: map[string]int{}}
	// targets that prefix one another ("/a" and "/a/b") and sort next to
	// each other, so a Put's walk over one target must stop at the next
	targets := []string{"http://t.test/a", "http://t.test/a/b", "http://t.test/a0", "http://u.test/", "http://v.test/x"}
	for i := range 20 {
		targets = append(targets, fmt.Sprintf("http://w.test/%d", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	day := func(d int) time.Time { return dayTime(1).Add(time.Duration(d) * time.Hour) }
	var byKey, walked int
	for batch := range 600 {
		if batch == 300 {
			byKey, walked = byKey+x.byKey, walked+x.walked
			x.Close()
			x = open()
		}
		var recs []Record
		for range 1 + rng.IntN(12) {
			from := rng.IntN(4)
			r := Record{
				Target: targets[rng.IntN(len(targets))],
				Source: fmt.Sprintf("http://s%d.test/", rng.IntN(8)),
				Anchor: fmt.Sprintf("text %d", rng.IntN(3)),
				From:   day(from),
				Seen:   day(from + rng.IntN(4)),
			}
			if r.Seen.After(r.From) && rng.IntN(2) == 0 {
				r.Until = r.Seen
			}
			recs = append(recs, r)
			if rng.IntN(6) == 0 { // a copy in the same batch, older or newer
				c := r
				c.Seen = r.Seen.Add(time.Duration(rng.IntN(3)-1) * time.Hour)
				c.Anchor = "copy"
				if c.Seen.Before(c.From) || (!c.Until.IsZero() && c.Until.After(c.Seen)) {
					c.Seen = r.Seen
				}
				recs = append(recs, c)
			}
		}
		n, err := x.Put(ctx, recs)
		if err != nil || n != len(recs) {
			t.Fatalf("batch %d: Put = %d, %v; want %d", batch, n, err, len(recs))
		}
		m.put(recs)
		for _, target := range targets {
			res, err := x.Links(ctx, target, time.Time{}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want []Record
			for _, r := range m.recs {
				if r.Target == target {
					want = append(want, r)
				}
			}
			Sort(want)
			if want == nil {
				want = []Record{}
			}
			if !reflect.DeepEqual(res.Records, want) || res.More != m.more[target] {
				t.Fatalf("batch %d, %s:\n got %v more %d\nwant %v more %d", batch, target, res.Records, res.More, want, m.more[target])
			}
		}
	}
	for _, target := range targets {
		if m.kept[target] < perTarget || m.more[target] == 0 {
			t.Errorf("%s: %d kept, %d refused: the batches did not fill it past its cap", target, m.kept[target], m.more[target])
		}
	}
	byKey, walked = byKey+x.byKey, walked+x.walked
	if byKey == 0 || walked == 0 {
		t.Errorf("%d targets read by key, %d walked: want both", byKey, walked)
	}
}
