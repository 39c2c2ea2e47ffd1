//go:build unix

package archive

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/herod-archive/herod/internal/id"
)

// BenchmarkIndexCheckDays writes an index of the store's shape straight
// into a goleveldb with the index's options (indexOptions) and measures
// what a revisit day's writes cost it at a size (docs/scale-storage.md):
// day 0 puts, per URL, a version, its host entry and a crawl state (about
// 400 bytes); each later day 95% of the URLs are checked unchanged (a
// check record, as Store.touch writes it, one Put each), 5% change (a
// version and a state, one batch) and 2% are new. Reported per later day:
// the MiB flushes and compactions wrote and read, the seconds they took,
// and process CPU per 1,000 URLs (goleveldb's compactions run in the
// process). The layouts put the day's checks under the URL's key
// (url-first, touchKey: what the store writes) or under the day
// (day-first: the day's checks a key range of their own); l0x8 is
// url-first with level-0 compactions at 8 tables instead of 4.
//
//	go test ./archive -run '^$' -bench IndexCheckDays -benchtime 1x -timeout 0
func BenchmarkIndexCheckDays(b *testing.B) {
	for _, urls := range []int{100_000, 1_000_000} {
		for _, layout := range []string{"url-first", "day-first", "l0x8"} {
			b.Run(fmt.Sprintf("urls=%d/%s", urls, layout), func(b *testing.B) {
				o := indexOptions(opt.Options{})
				if layout == "l0x8" {
					o.CompactionL0Trigger, o.WriteL0SlowdownTrigger, o.WriteL0PauseTrigger = 8, 16, 24
				}
				for range b.N {
					checkDays(b, o, urls, 3, layout == "day-first")
				}
			})
		}
	}
}

func checkDays(b *testing.B, o *opt.Options, urls, days int, dayFirst bool) {
	db, err := leveldb.OpenFile(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	filler := make([]byte, 1024)
	for i := range filler {
		filler[i] = byte('a' + rng.IntN(26)) // text-like: snappy halves it
	}
	url := func(i int) string { return fmt.Sprintf("http://h%d.example/s%d/page-%d.html", i%400, i/4000, i) }
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	version := func(batch *leveldb.Batch, i, day int) {
		u := url(i)
		k := id.OfString(u)
		d := id.OfString(fmt.Sprint(u, day))
		batch.Put(versionKey(k, t0.AddDate(0, 0, day), d), filler[:40])
		batch.Put(hostKey(hostOf(u), u), nil)
		off := rng.IntN(len(filler) - 320)
		batch.Put(stateKey(k), append([]byte(u), filler[off:off+280]...))
	}
	check := func(i, day int) []byte {
		k := id.OfString(url(i))
		if dayFirst {
			key := encDay([]byte{pTouch}, int64(day))
			return append(key, k[:]...)
		}
		return touchKey(k, int64(day))
	}
	var (
		stats leveldb.DBStats
		total struct {
			read, write int64
			busy        time.Duration
			cpu         time.Duration
			urls        int
		}
	)
	live := urls
	for day := range days {
		if err := db.Stats(&stats); err != nil {
			b.Fatal(err)
		}
		r0, w0, t0d, cpu0 := stats.LevelRead.Sum(), stats.LevelWrite.Sum(), sumDurations(stats.LevelDurations), cpuTime()
		var batch leveldb.Batch
		flush := func() {
			if batch.Len() > 0 {
				if err := db.Write(&batch, nil); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
		}
		if day == 0 {
			for i := range urls {
				version(&batch, i, 0)
				if batch.Len() >= 64*3 {
					flush()
				}
			}
			flush()
			continue
		}
		v := binary.BigEndian.AppendUint64(nil, uint64(day))
		v = append(v, 1)
		for i := range live {
			if rng.IntN(100) < 5 {
				version(&batch, i, day)
				flush()
				continue
			}
			if err := db.Put(check(i, day), v, nil); err != nil {
				b.Fatal(err)
			}
		}
		for i := live; i < live+urls/50; i++ {
			version(&batch, i, day)
			flush()
		}
		total.urls += live + urls/50
		live += urls / 50
		if err := db.Stats(&stats); err != nil {
			b.Fatal(err)
		}
		total.read += stats.LevelRead.Sum() - r0
		total.write += stats.LevelWrite.Sum() - w0
		total.busy += sumDurations(stats.LevelDurations) - t0d
		total.cpu += cpuTime() - cpu0
	}
	later := float64(days - 1)
	b.ReportMetric(float64(total.write)/(1<<20)/later, "compW-MiB/day")
	b.ReportMetric(float64(total.read)/(1<<20)/later, "compR-MiB/day")
	b.ReportMetric(total.busy.Seconds()/later, "comp-s/day")
	b.ReportMetric(1000*total.cpu.Seconds()/float64(total.urls), "cpu-s/1000urls")
	b.Logf("levels at the end (MiB): %v", mibs(stats.LevelSizes))
}

func sumDurations(ds []time.Duration) (s time.Duration) {
	for _, d := range ds {
		s += d
	}
	return s
}

func mibs(sizes []int64) (out []int64) {
	for _, s := range sizes {
		out = append(out, s>>20)
	}
	return out
}
