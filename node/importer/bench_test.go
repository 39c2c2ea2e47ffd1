package importer

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// benchPages returns n HTML pages of about size bytes, of words drawn at
// random (so they compress as text does, not as repeats).
func benchPages(n, size int) []string {
	words := strings.Fields("the archive of every version of every page a ring of volunteer nodes crawls daily " +
		"history web capture record owner replica witness import export researcher collection link anchor text")
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>page %d</title></head><body><p>", i)
		for b.Len() < size {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteString("</p></body></html>")
		out[i] = b.String()
	}
	return out
}

// BenchmarkImport imports a gzip WARC of 1,000 pages of 10 KiB into an
// empty store (this node the owner of every URL), against storing the
// same captures as a crawler does (archive.Store.Put, signed), arms
// alternating: records per second and bytes added per record of each.
//
//	go test ./node/importer -run '^$' -bench Import -benchtime 3x
func BenchmarkImport(b *testing.B) {
	const n = 1000
	pages := benchPages(n, 10<<10)
	var recs [][]byte
	for i, p := range pages {
		head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(p))
		recs = append(recs, warcRecord("response", fmt.Sprintf("http://bench.example/p%d", i), "2015-03-04T05:06:07Z", head+p, len(head)))
	}
	src := gzipEach(recs)
	open := func() *archive.Store {
		st, err := archive.Open(b.TempDir(), archive.Options{NoSync: true, Verifier: edVerifier{}, DictSamples: -1,
			Signer: edSigner{ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}})
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	ctx := context.Background()
	var impT, putT time.Duration
	var impB, putB int64
	for range b.N {
		// import
		st := open()
		im := New(Config{Store: st, Dir: b.TempDir(), Admit: Admit(func(id.ID) bool { return true }, time.Now),
			Route: func(context.Context, id.ID) (Owner, error) { return Owner{Self: true}, nil }})
		p := b.TempDir() + "/src.warc.gz"
		writeFile(b, p, src)
		start := time.Now()
		rep, err := im.File(ctx, p, "bench", func(re RecordError) { b.Log(re) })
		impT += time.Since(start)
		if err != nil || rep.Added != n {
			b.Fatalf("%+v %v", rep, err)
		}
		impB += st.Stats().Bytes
		st.Close()
		// put
		st = open()
		start = time.Now()
		for i, pg := range pages {
			c := archive.Capture{URL: fmt.Sprintf("http://bench.example/p%d", i), Time: time.Date(2015, 3, 4, 5, 6, 7, 0, time.UTC),
				Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(pg)}
			if _, _, err := st.Put(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
		putT += time.Since(start)
		putB += st.Stats().Bytes
		st.Close()
	}
	recsN := float64(n * b.N)
	b.ReportMetric(recsN/impT.Seconds(), "import-rec/s")
	b.ReportMetric(recsN/putT.Seconds(), "put-rec/s")
	b.ReportMetric(float64(impB)/recsN, "import-B/rec")
	b.ReportMetric(float64(putB)/recsN, "put-B/rec")
	b.ReportMetric(float64(len(src))/n, "source-B/rec")
	b.ReportMetric(float64(impB)/float64(putB), "bytes-import/put")
	b.ReportMetric(putT.Seconds()/impT.Seconds(), "speed-import/put")
}
