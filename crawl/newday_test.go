package crawl

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
)

// TestNewDayStagesWithoutBlocking: while a new day is staged, adds go
// through (they wait for the switch only), and what they add is in the
// new day once: a known URL staged already is not queued twice, and a URL
// first seen while staging is queued on the new day too.
func TestNewDayStagesWithoutBlocking(t *testing.T) {
	q, err := openQueue(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	const known = 3 * newDayChunk
	var urls []string
	for i := range known {
		urls = append(urls, fmt.Sprintf("http://h%d.example/p%d", i%7, i))
	}
	if _, _, _, err := q.add(urls, 0); err != nil {
		t.Fatal(err)
	}
	day := q.currentDay() + 1
	// owns holds the staging in the middle of the known URLs.
	held, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	owns := func(string) bool {
		if calls.Add(1) == newDayChunk+1 {
			close(held)
			<-release
		}
		return true
	}
	q.turn.Lock()
	type result struct {
		st  *stagedDay
		err error
	}
	staged := make(chan result, 1)
	go func() {
		st, err := q.stageDay(day, owns, nil, nil)
		staged <- result{st, err}
	}()
	<-held
	// Intake goes on for the old day: a URL never seen, and a known URL
	// the staging has already queued for the new day (the first chunk).
	done := make(chan error, 1)
	go func() {
		_, _, _, err := q.add([]string{"http://new.example/late", urls[0]}, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("add blocked by a new day's staging")
	}
	close(release)
	r := <-staged
	if r.err != nil {
		t.Fatal(r.err)
	}
	hosts, n, _, err := q.switchDay(r.st)
	q.turn.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := q.dropBefore(day); err != nil {
		t.Fatal(err)
	}
	if want := int64(known + 1); n != want || hosts["new.example"] != 1 {
		t.Fatalf("new day queued %d (%d of new.example), want %d (1)", n, hosts["new.example"], want)
	}
	// Every URL exactly once in the new day's keyspace, none of the old.
	count := map[string]int{}
	for h := range hosts {
		var after []byte
		for {
			es, err := q.next(h, after, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				count[e.url]++
			}
			after = es[len(es)-1].key
		}
	}
	for _, u := range append(urls, "http://new.example/late") {
		if count[u] != 1 {
			t.Fatalf("%s queued %d times on the new day, want 1", u, count[u])
		}
	}
	it := q.db.NewIterator(nil, nil)
	defer it.Release()
	old := dayPrefix(day - 1)
	for it.Next() {
		if bytes.HasPrefix(it.Key(), old) {
			t.Fatalf("old day's entry %q left", it.Key())
		}
	}
	// Adds on the new day see the staged URLs as seen.
	if added, _, _, err := q.add([]string{urls[1], "http://new.example/late"}, 0); err != nil || len(added) != 0 {
		t.Fatalf("adding staged URLs on the new day: %d added, %v; want none", len(added), err)
	}
}

// TestLegacyQueueMigrates: entries of a queue written before days had
// keyspaces are fetched on the current day after an upgrade.
func TestLegacyQueueMigrates(t *testing.T) {
	dir := t.TempDir()
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	legacy := append(append([]byte(prefixLegacy), "a.example"...), 0)
	legacy = append(legacy, u64(5)...)
	if err := db.Put(legacy, []byte("http://a.example/x"), nil); err != nil {
		t.Fatal(err)
	}
	db.Put(keyDay, u64(3), nil)
	db.Put([]byte(prefixURL+"http://a.example/x"), u64(3), nil)
	db.Close()
	q, err := openQueue(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	hosts, n, err := q.pending()
	if err != nil || n != 1 || hosts["a.example"] != 1 {
		t.Fatalf("pending after the upgrade: %v %d %v", hosts, n, err)
	}
	es, err := q.next("a.example", nil, 10)
	if err != nil || len(es) != 1 || es[0].url != "http://a.example/x" {
		t.Fatalf("next: %v %v", es, err)
	}
	if q.seq < 6 {
		t.Fatalf("seq %d after a legacy entry numbered 5", q.seq)
	}
}

// TestStagedWriteOutsideLock: a staged chunk is written after the queue's
// lock is released, so an add never waits for a write goleveldb holds up;
// until that write is done the chunk's URLs count as seen, and each is
// queued once on the new day.
func TestStagedWriteOutsideLock(t *testing.T) {
	q, err := openQueue(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	urls := []string{"http://a.example/1", "http://a.example/2", "http://b.example/1"}
	if _, _, _, err := q.add(urls, 0); err != nil {
		t.Fatal(err)
	}
	// Unsee one, so an add of the old day would queue it again but for the
	// chunk staged (and not yet written) meanwhile.
	if err := q.unsee(urls[0]); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var writes atomic.Int64
	q.beforeStagedWrite = func() {
		if writes.Add(1) == 1 {
			close(held)
			<-release
		}
	}
	day := q.currentDay() + 1
	q.turn.Lock()
	type result struct {
		st  *stagedDay
		err error
	}
	staged := make(chan result, 1)
	go func() {
		st, err := q.stageDay(day, nil, nil, nil)
		staged <- result{st, err}
	}()
	<-held
	done := make(chan []entry, 1)
	go func() {
		added, _, _, err := q.add([]string{urls[0], "http://c.example/new"}, 0)
		if err != nil {
			t.Error(err)
		}
		done <- added
	}()
	select {
	case added := <-done:
		if len(added) != 1 || added[0].url != "http://c.example/new" {
			t.Fatalf("add during a held staged write queued %v, want only the new URL", added)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("add waited for a staged chunk's write")
	}
	close(release)
	r := <-staged
	if r.err != nil {
		t.Fatal(r.err)
	}
	hosts, n, _, err := q.switchDay(r.st)
	q.turn.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 || hosts["a.example"] != 2 || hosts["c.example"] != 1 {
		t.Fatalf("new day queued %d (hosts %v), want 4: each URL once", n, hosts)
	}
	if len(q.staged) != 0 {
		t.Fatalf("%d URLs left as staged after the writes", len(q.staged))
	}
}
