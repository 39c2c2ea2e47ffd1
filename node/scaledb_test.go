//go:build linux

package node

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
)

// scaledb_test.go: the scale benchmark's per-database figures
// (docs/scale-storage.md). Every goleveldb database of a node reports,
// per day, what its flushes and compactions read and wrote and the size
// of each level at the day's end, so a day's compaction cost is put on
// the database that pays it.

// statser is what each of the node's goleveldb holders offers.
type statser interface {
	DBStats(*leveldb.DBStats) error
}

// scaleDBNames are the node's goleveldb databases, in table order.
var scaleDBNames = []string{"index", "queue", "search", "links", "rank", "outbox"}

// nodeDBs returns n's goleveldb databases by name: the archive index,
// the crawl queue, the search postings store, the link index, the rank
// store and the forwarder's outbox.
func nodeDBs(n *Node) map[string]statser {
	dbs := map[string]statser{"index": n.store, "queue": n.crawler, "outbox": n.outbox}
	if n.searchStore != nil {
		dbs["search"] = n.searchStore
	}
	if n.linkIdx != nil {
		dbs["links"] = n.linkIdx.index
		dbs["rank"] = n.linkIdx.ranks
	}
	return dbs
}

// dbCounters are one database's cumulative goleveldb counters (summed
// over the ring's nodes): compaction reads, flush and compaction writes
// and their time, all storage I/O, and the level sizes.
type dbCounters struct {
	read, write, ioRead, ioWrite int64
	busy                         time.Duration
	levels                       []int64
}

// levelMarks keeps, per node and database, the highest cumulative
// compaction counters each level has shown. goleveldb reports them only
// for the levels its current version has, so a level that empties (the
// outbox, drained) dropped out of the sums and a day's figures went
// negative; a level's counters never decrease, so its highest reading
// stands for it while it is absent.
type levelMarks map[string][]levelMark

// levelMark is one level's cumulative counters.
type levelMark struct {
	read, write int64
	busy        time.Duration
}

// add takes a reading of database key and returns its compaction reads,
// writes and time summed over every level it has shown.
func (m levelMarks) add(key string, st *leveldb.DBStats) (read, write int64, busy time.Duration) {
	ls := m[key]
	for i := range st.LevelRead {
		if i >= len(ls) {
			ls = append(ls, levelMark{})
		}
		l := &ls[i]
		l.read = max(l.read, st.LevelRead[i])
		l.write = max(l.write, st.LevelWrite[i])
		if i < len(st.LevelDurations) {
			l.busy = max(l.busy, st.LevelDurations[i])
		}
	}
	m[key] = ls
	for _, l := range ls {
		read, write, busy = read+l.read, write+l.write, busy+l.busy
	}
	return read, write, busy
}

// ringDBCounters reads every node's databases' counters, summed per name,
// the levels' compaction counters through marks.
func ringDBCounters(lr *LocalRing, marks levelMarks) map[string]dbCounters {
	out := map[string]dbCounters{}
	for ni, n := range lr.Nodes {
		for name, db := range nodeDBs(n) {
			var st leveldb.DBStats
			if err := db.DBStats(&st); err != nil {
				continue // closed: counted as nothing
			}
			c := out[name]
			read, write, busy := marks.add(fmt.Sprintf("%d/%s", ni, name), &st)
			c.read += read
			c.write += write
			c.busy += busy
			c.ioRead += int64(st.IORead)
			c.ioWrite += int64(st.IOWrite)
			for i, sz := range st.LevelSizes {
				if i >= len(c.levels) {
					c.levels = append(c.levels, 0)
				}
				c.levels[i] += sz
			}
			out[name] = c
		}
	}
	return out
}

// scaleDB is one database's day in a scale row.
type scaleDB struct {
	Name        string    `json:"name"`
	CompReadMB  float64   `json:"compReadMB"`  // bytes compactions read over the day
	CompWriteMB float64   `json:"compWriteMB"` // bytes flushes and compactions wrote over the day
	CompS       float64   `json:"compS"`       // time flushes and compactions took (wall, in goleveldb's own goroutine)
	IOReadMB    float64   `json:"ioReadMB"`    // all storage reads: Gets' blocks and compactions
	IOWriteMB   float64   `json:"ioWriteMB"`   // all storage writes: journal, flushes, compactions
	LevelsMB    []float64 `json:"levelsMB"`    // level sizes at the day's end, level 0 first
}

// dbDay returns the day's figures per database from the counters at
// its start and end, in scaleDBNames order.
func dbDay(from, to map[string]dbCounters) []scaleDB {
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	var out []scaleDB
	for _, name := range scaleDBNames {
		e, ok := to[name]
		if !ok {
			continue
		}
		s := from[name]
		d := scaleDB{Name: name,
			CompReadMB: mb(e.read - s.read), CompWriteMB: mb(e.write - s.write), CompS: (e.busy - s.busy).Seconds(),
			IOReadMB: mb(e.ioRead - s.ioRead), IOWriteMB: mb(e.ioWrite - s.ioWrite)}
		for _, sz := range e.levels {
			d.LevelsMB = append(d.LevelsMB, mb(sz))
		}
		out = append(out, d)
	}
	return out
}

// dbLine is a day's databases in one log line.
func dbLine(dbs []scaleDB) string {
	var b strings.Builder
	for i, d := range dbs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s comp read %.0f MiB write %.0f MiB %.1fs, io read %.0f write %.0f MiB, levels %s",
			d.Name, d.CompReadMB, d.CompWriteMB, d.CompS, d.IOReadMB, d.IOWriteMB, levelsText(d.LevelsMB))
	}
	return b.String()
}

// levelsText is level sizes in MiB, slash-separated, level 0 first.
func levelsText(levels []float64) string {
	var parts []string
	for _, l := range levels {
		parts = append(parts, strconv.FormatFloat(l, 'f', 1, 64))
	}
	return strings.Join(parts, "/")
}

// writeScaleDBRows writes the rows' databases as scale-<name>-dbs.csv,
// one line per day and database.
func writeScaleDBRows(dir, name string, rows []scaleRow) error {
	f, err := os.Create(filepath.Join(dir, "scale-"+name+"-dbs.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	w := csv.NewWriter(f)
	w.Write([]string{"day", "db", "compReadMB", "compWriteMB", "compS", "ioReadMB", "ioWriteMB", "levelsMB"})
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, r := range rows {
		for _, d := range r.DBs {
			w.Write([]string{strconv.Itoa(r.Day), d.Name, f2(d.CompReadMB), f2(d.CompWriteMB), f2(d.CompS),
				f2(d.IOReadMB), f2(d.IOWriteMB), levelsText(d.LevelsMB)})
		}
	}
	w.Flush()
	return w.Error()
}

// TestScaleDBs checks that the scale benchmark finds every goleveldb
// database of a node and puts a day's writes on the database that took
// them: a node's six databases report their counters, and a day's
// figures are the counters' differences, with the level sizes of its end.
func TestScaleDBs(t *testing.T) {
	ctx := t.Context()
	lr, err := StartLocalRing(ctx, t.TempDir(), 1, Config{VirtualServers: 1, ReplicationInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	got := ringDBCounters(lr, levelMarks{})
	for _, name := range scaleDBNames {
		if _, ok := got[name]; !ok {
			t.Errorf("database %s not found among %v", name, got)
		}
	}
	from := map[string]dbCounters{"index": {read: 1 << 20, write: 2 << 20, busy: time.Second, levels: []int64{0, 5 << 20}}}
	to := map[string]dbCounters{
		"index": {read: 3 << 20, write: 6 << 20, ioWrite: 8 << 20, busy: 3 * time.Second, levels: []int64{1 << 20, 6 << 20, 10 << 20}},
		"queue": {write: 1 << 20},
	}
	day := dbDay(from, to)
	want := []scaleDB{
		{Name: "index", CompReadMB: 2, CompWriteMB: 4, CompS: 2, IOWriteMB: 8, LevelsMB: []float64{1, 6, 10}},
		{Name: "queue", CompWriteMB: 1},
	}
	if fmt.Sprint(day) != fmt.Sprint(want) {
		t.Errorf("dbDay = %v, want %v", day, want)
	}
	dir := t.TempDir()
	if err := writeScaleDBRows(dir, "t", []scaleRow{{Day: 1, DBs: day}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "scale-t-dbs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "1,index,2.00,4.00,2.00,0.00,8.00,1.0/6.0/10.0\n"; !strings.Contains(string(b), want) {
		t.Errorf("csv:\n%s\nwant a line %q", b, want)
	}
}

// TestScaleLevelMarks: a level that empties keeps its counters in the
// sums (goleveldb drops it from its stats), and one that fills again
// counts from where it was, not twice.
func TestScaleLevelMarks(t *testing.T) {
	m := levelMarks{}
	day0 := &leveldb.DBStats{LevelRead: []int64{10, 100}, LevelWrite: []int64{20, 200}, LevelDurations: []time.Duration{time.Second, 2 * time.Second}}
	drained := &leveldb.DBStats{LevelRead: []int64{15}, LevelWrite: []int64{25}, LevelDurations: []time.Duration{time.Second}}
	again := &leveldb.DBStats{LevelRead: []int64{15, 130}, LevelWrite: []int64{25, 260}, LevelDurations: []time.Duration{time.Second, 3 * time.Second}}
	for i, c := range []struct {
		st          *leveldb.DBStats
		read, write int64
		busy        time.Duration
	}{{day0, 110, 220, 3 * time.Second}, {drained, 115, 225, 3 * time.Second}, {again, 145, 285, 4 * time.Second}} {
		read, write, busy := m.add("0/outbox", c.st)
		if read != c.read || write != c.write || busy != c.busy {
			t.Errorf("reading %d: read %d write %d busy %v, want %d %d %v", i, read, write, busy, c.read, c.write, c.busy)
		}
	}
}
