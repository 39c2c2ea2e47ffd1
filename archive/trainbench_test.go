package archive

import (
	"fmt"
	"testing"
)

// BenchmarkDictSampleBytes trains a dictionary on the first 300 pages of
// compressionPages, cut and capped as the trainer collects them (each
// page to maxSampleBytes, the samples to 2 MiB, 1 MiB or 512 KiB), and
// reports the training's CPU (train-ms) and what the dictionary packs
// the other pages to at the records' level (out/html): what a cheaper
// training would cost in disk.
func BenchmarkDictSampleBytes(b *testing.B) {
	pages := compressionPages(b)
	train := min(300, len(pages)/4)
	rest := pages[train:]
	for _, total := range []int{maxSampleTotal, 1 << 20, 512 << 10} {
		b.Run(fmt.Sprintf("%dKiB", total>>10), func(b *testing.B) {
			var samples [][]byte
			n := 0
			for _, p := range pages[:train] {
				if n >= total {
					break
				}
				s := p[:min(len(p), maxSampleBytes)]
				samples, n = append(samples, s), n+len(s)
			}
			var zd *zdict
			cpu0 := cpuTime()
			for range b.N {
				var err error
				zd, err = trainDict(samples)
				must(b, err)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "train-ms")
			enc := zd.encoder()
			var in, out int
			var buf []byte
			for _, p := range rest {
				buf = enc.EncodeAll(p, buf[:0])
				in, out = in+len(p), out+len(buf)
			}
			b.ReportMetric(float64(out)/float64(in), "out/html")
		})
	}
}
