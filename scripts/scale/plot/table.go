package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// fullRow is the part of TestScale's rows the tables print.
type fullRow struct {
	row
	Live          int     `json:"live"`
	Fetched       int64   `json:"fetched"`
	NewVersions   int64   `json:"newVersions"`
	WallS         float64 `json:"wallS"`
	PagesPerS     float64 `json:"pagesPerS"`
	HeapPeakMB    float64 `json:"heapPeakMB"`
	Goroutines    int     `json:"goroutines"`
	OpenFiles     int     `json:"openFiles"`
	DiskMB        float64 `json:"diskMB"`
	DiskAddedMB   float64 `json:"diskAddedMB"`
	BytesPerCheck float64 `json:"bytesPerCheck"`
	// The archive index's bytes per version held (0 in rows of older
	// runs: printed as n/a).
	IndexBytesPerVersion float64  `json:"indexBytesPerVersion"`
	LoopStallMS          float64  `json:"loopStallMs"`
	SwitchMS             float64  `json:"switchMs"`
	RollStallMS          *float64 `json:"rollStallMs"` // absent from rows of older runs
	Queued               int64    `json:"queued"`
	Known                int64    `json:"known"`
	Mine                 int      `json:"mine"`
	ReplayP50MS          float64  `json:"replayP50Ms"`
	ReplayP99MS          float64  `json:"replayP99Ms"`
	CDXMS                float64  `json:"cdxMs"`
	CDXRows              int      `json:"cdxRows"`
	// Rows of a ring (Nodes > 1) carry its replication.
	Held          int64   `json:"held"`
	ReplMB        float64 `json:"replMB"`
	ReplRounds    int     `json:"replRounds"`
	InSyncPerPair float64 `json:"inSyncBytesPerPair"`
	// Each goleveldb database's day (absent from rows of older runs).
	DBs []dbRow `json:"dbs"`
}

// dbRow is one goleveldb database's day: what its flushes and
// compactions read and wrote, and its level sizes at the day's end.
type dbRow struct {
	Name        string    `json:"name"`
	CompReadMB  float64   `json:"compReadMB"`
	CompWriteMB float64   `json:"compWriteMB"`
	CompS       float64   `json:"compS"`
	LevelsMB    []float64 `json:"levelsMB"`
}

// median returns the median of the later days' (day >= 1) values of f,
// or day 0's when there is no later day.
func median(rs []fullRow, f func(fullRow) float64) float64 {
	var v []float64
	for _, r := range rs {
		if r.Day >= 1 {
			v = append(v, f(r))
		}
	}
	if len(v) == 0 {
		return f(rs[0])
	}
	return middle(v)
}

// middle returns the median of vs: the mean of the two middle values of
// an even count (a 3-day run's later days are two).
func middle(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[n/2]
}

// maxOf returns the largest value of f over the days (from day from).
func maxOf(rs []fullRow, from int, f func(fullRow) float64) float64 {
	m := 0.0
	for _, r := range rs {
		if r.Day >= from {
			m = max(m, f(r))
		}
	}
	return m
}

// checkRepeats reports an error unless the runs are of one size, node
// count and day count: the repeats of the baseline.
func checkRepeats(runs [][]fullRow) error {
	for _, rs := range runs[1:] {
		a, b := runs[0], rs
		if a[0].URLs != b[0].URLs || a[0].Nodes != b[0].Nodes || len(a) != len(b) {
			return fmt.Errorf("the baseline's runs differ: %s × %d days and %s × %d days", a[0].label(), len(a), b[0].label(), len(b))
		}
	}
	return nil
}

// cpuFigures returns each run's CPU per 1,000 pages on day 0 and on
// later days (the median of its later days).
func cpuFigures(runs [][]fullRow) (day0, later []float64) {
	for _, rs := range runs {
		day0 = append(day0, rs[0].CPUPer1000)
		later = append(later, median(rs, func(r fullRow) float64 { return r.CPUPer1000 }))
	}
	return day0, later
}

// join2 formats vs with two decimals, comma-separated.
func join2(vs []float64) string {
	ss := make([]string, len(vs))
	for i, v := range vs {
		ss[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(ss, ", ")
}

// writeTables prints, as Markdown, the summary of every run (ratios to
// the baseline: the first base runs, repeats of one size whose medians
// it divides by) and a table of days per run.
func writeTables(w io.Writer, runs [][]fullRow, base int) {
	d0s, laters := cpuFigures(runs[:base])
	base0, baseLater := middle(d0s), middle(laters)
	if base > 1 {
		fmt.Fprintf(w, "Baseline: %s, %d runs; CPU s/1,000 day 0 %s (median %.2f), later %s (median %.2f).\n\n",
			runs[0][0].label(), base, join2(d0s), base0, join2(laters), baseLater)
	}
	fmt.Fprintln(w, "| run | days | pages/s day 0 | pages/s later | CPU s/1,000 day 0 | CPU s/1,000 later | ÷ baseline day 0 / later | RSS max MiB | heap max MiB | disk/page day 0 KiB | disk/page-day later B | index B/version last day | rollover max s | switch max ms | stall in rollover max ms | intake stall max ms |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, rs := range runs {
		r0 := rs[0]
		later := median(rs, func(r fullRow) float64 { return r.CPUPer1000 })
		label := r0.label()
		if base > 1 && i < base {
			label += fmt.Sprintf(" (baseline %d)", i+1)
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.2f | %.2f | %.2f / %.2f | %.0f | %.0f | %.1f | %.0f | %s | %.2f | %.0f | %s | %.0f |\n",
			label, len(rs), r0.PagesPerS, median(rs, func(r fullRow) float64 { return r.PagesPerS }),
			r0.CPUPer1000, later, r0.CPUPer1000/base0, later/baseLater,
			maxOf(rs, 0, func(r fullRow) float64 { return r.RSSPeakMB }), maxOf(rs, 0, func(r fullRow) float64 { return r.HeapPeakMB }),
			r0.DiskAddedMB*1024/float64(max(r0.Fetched, 1)), median(rs, perPageDay), indexPerVersion(rs[len(rs)-1]),
			maxOf(rs, 1, func(r fullRow) float64 { return r.RolloverS }), maxOf(rs, 1, func(r fullRow) float64 { return r.SwitchMS }),
			rollStall(rs, -1), maxOf(rs, 1, func(r fullRow) float64 { return r.IntakeStallMS }))
	}
	for i, rs := range runs {
		if i > 0 && i < base {
			continue // the baseline's repeats: the summary has their figures
		}
		fmt.Fprintf(w, "\n%s:\n\n", rs[0].label())
		fmt.Fprintln(w, "| day | live | fetched | new versions | s | CPU s/1,000 | RSS MiB | heap MiB | gor. | files | disk MiB | index B/version | rollover s | switch ms | stall in rollover ms | stall ms | loop ms | queued | known | held | replay p50/p99 ms | CDX ms (rows) |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for i, r := range rs {
			if len(rs) > 10 && i%5 != 0 && i != len(rs)-1 && i != 1 {
				continue
			}
			fmt.Fprintf(w, "| %d | %d | %d | %d | %.0f | %.2f | %.0f | %.0f | %d | %d | %.0f | %s | %.2f | %.1f | %s | %.0f | %.0f | %d | %d | %d | %.1f / %.1f | %.0f (%d) |\n",
				r.Day, r.Live, r.Fetched, r.NewVersions, r.WallS, r.CPUPer1000, r.RSSPeakMB, r.HeapPeakMB, r.Goroutines, r.OpenFiles,
				r.DiskMB, indexPerVersion(r), r.RolloverS, r.SwitchMS, rollStall(rs, r.Day), r.IntakeStallMS, r.LoopStallMS, r.Queued, r.Known, r.Mine, r.ReplayP50MS, r.ReplayP99MS, r.CDXMS, r.CDXRows)
		}
		writeDBTable(w, rs)
		if rs[0].Nodes > 1 {
			fmt.Fprintln(w, "\n| day | versions held (copies included) | replication MiB | rounds to sync | in-sync bytes a pair |")
			fmt.Fprintln(w, "|---:|---:|---:|---:|---:|")
			for _, r := range rs {
				fmt.Fprintf(w, "| %d | %d | %.1f | %d | %.0f |\n", r.Day, r.Held, r.ReplMB, r.ReplRounds, r.InSyncPerPair)
			}
		}
	}
}

// indexPerVersion formats a day's archive index bytes per version held,
// "n/a" for rows of runs that did not measure it.
func indexPerVersion(r fullRow) string {
	if r.IndexBytesPerVersion == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", r.IndexBytesPerVersion)
}

// perPageDay is the disk a later day added per request answered (its new
// and changed versions included; day 0 has its own column).
func perPageDay(r fullRow) float64 {
	if r.Day == 0 {
		return 0
	}
	return r.DiskAddedMB * (1 << 20) / float64(max(r.Fetched, 1))
}

// rollStall formats the longest link intake that overlapped the rollover
// of day (of all later days when day is -1), "n/a" where the rows do not
// carry it.
func rollStall(rs []fullRow, day int) string {
	m, any := 0.0, false
	for _, r := range rs {
		if r.Day >= 1 && (day < 0 || r.Day == day) && r.RollStallMS != nil {
			m, any = max(m, *r.RollStallMS), true
		}
	}
	if !any {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", m)
}

// writeDBTable prints a run's goleveldb databases per day: compaction
// MiB read and written (flushes included) per 1,000 requests answered,
// the seconds compactions took, and the level sizes at the day's end.
// Rows of older runs carry no databases and print nothing.
func writeDBTable(w io.Writer, rs []fullRow) {
	if len(rs[0].DBs) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| day | database | compaction read MiB | written MiB | per 1,000 pages read / written MiB | compaction s | levels MiB (L0/L1/…) |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---|")
	for i, r := range rs {
		if len(rs) > 10 && i%5 != 0 && i != len(rs)-1 && i != 1 {
			continue
		}
		k := float64(max(r.Fetched, 1)) / 1000
		for _, d := range r.DBs {
			var lv []string
			for _, l := range d.LevelsMB {
				lv = append(lv, fmt.Sprintf("%.0f", l))
			}
			fmt.Fprintf(w, "| %d | %s | %.0f | %.0f | %.2f / %.2f | %.1f | %s |\n",
				r.Day, d.Name, d.CompReadMB, d.CompWriteMB, d.CompReadMB/k, d.CompWriteMB/k, d.CompS, strings.Join(lv, "/"))
		}
	}
}
