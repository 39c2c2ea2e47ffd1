package archive

import (
	"context"
	"errors"
	"testing"
	"time"
)

// BenchmarkImportSigned measures what a replica's Import costs per record
// as a ring member pays it: records of 10-30 KB pages signed by their
// fetcher, sent as stored (ReadStored), imported by a store that verifies
// the signature (Options.Verifier) and signs its witness statement
// (Options.Signer), one at a time (serial) and eight at a time as
// replicate.storeAll imports an offer's records (par8). gzip is a
// sender without a dictionary (a fresh ring's first records) and a
// replica waiting for a peer's dictionary (a joiner: its samples
// collected, Options.DictWait not passed); dict is a sender's zstd frames
// imported by a replica that holds the dictionary and has its own. It
// reports CPU-µs per import (all threads) besides records/s; par8/synced
// writes as a node does (fsyncs, Options.CommitWindow) and reports the
// index groups committed per record.
func BenchmarkImportSigned(b *testing.B) {
	pages := benchPages(256)
	ctx := context.Background()
	const n = 4096
	now := func() time.Time { return t0.Add(time.Hour) }
	for _, dict := range []bool{false, true} {
		name := "gzip"
		if dict {
			name = "dict"
		}
		src := openTest(b, Options{NoSync: true, DictSamples: -1, Signer: newEdSigner(1)})
		if dict {
			withDict(b, src)
		}
		names := make([]string, n)
		stored := make([][]byte, n)
		for i := range n {
			v, _ := mustPut(b, src, benchCapture(i, pages[i%len(pages)], t0))
			data, err := src.ReadStored(ctx, v.Entry())
			must(b, err)
			names[i], stored[i] = v.Entry().Name(), data
		}
		replica := func(b *testing.B, synced bool) *Store {
			o := Options{NoSync: !synced, Verifier: edVerifier{}, Signer: newEdSigner(2), Now: now}
			if !dict {
				o.DictSamples, o.DictWait = 32, 1<<30
				return openTest(b, o)
			}
			o.DictSamples = -1
			dst := openTest(b, o)
			withDict(b, dst)
			ref, _ := src.OwnDictionary()
			raw, err := src.Dictionary(ref)
			must(b, err)
			must(b, dst.AddDictionary(ref, raw))
			return dst
		}
		b.Run(name+"/serial", func(b *testing.B) {
			if b.N > n {
				b.Skipf("at most %d records", n)
			}
			dst := replica(b, false)
			cpu0 := cpuTime()
			for i := range b.N {
				if _, added, err := dst.Import(ctx, names[i], stored[i]); err != nil || !added {
					b.Fatalf("import %d: added %v, %v", i, added, err)
				}
			}
			reportImport(b, cpu0)
		})
		for _, synced := range []bool{false, true} {
			run := name + "/par8"
			if synced {
				run += "/synced" // groups and their fsyncs, as a node writes
			}
			b.Run(run, func(b *testing.B) {
				if b.N > n {
					b.Skipf("at most %d records", n)
				}
				dst := replica(b, synced)
				groups0 := groupCommits(dst)
				importPar8(b, dst, names, stored)
				if synced {
					b.ReportMetric(float64(groupCommits(dst)-groups0)/float64(b.N), "groups/record")
				}
			})
		}
	}
}

// importPar8 imports the first b.N records on 8 goroutines, as
// replicate.storeAll does an offer's, and reports CPU and rate.
func importPar8(b *testing.B, dst *Store, names []string, stored [][]byte) {
	ctx := context.Background()
	next := make(chan int)
	errs := make(chan error, 8)
	cpu0 := cpuTime()
	for range 8 {
		go func() {
			var first error
			for i := range next {
				_, added, err := dst.Import(ctx, names[i], stored[i])
				if err == nil && !added {
					err = errors.New("record not added")
				}
				if first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	for range 8 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	reportImport(b, cpu0)
}

// reportImport reports records/s and CPU-µs a record since cpu0.
func reportImport(b *testing.B, cpu0 time.Duration) {
	cpu := cpuTime() - cpu0
	b.ReportAllocs()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/record")
}
