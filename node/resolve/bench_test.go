package resolve

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// trustProtocol is the baseline of BenchmarkVerifiedReads: the archive
// protocol as it was before reads were verified (1.0.0): the owner's
// versions as it lists them, and its capture as a header and a body
// checked only against the digest the same reply names.
const trustProtocol protocol.ID = "/herod/archive-trusting-baseline"

// trustReply is the baseline's reply header.
type trustReply struct {
	NotFound bool              `json:"notFound,omitempty"`
	Versions []archive.Version `json:"versions,omitempty"`
	Version  archive.Version   `json:"version,omitzero"`
	Capture  *archive.Capture  `json:"capture,omitempty"` // without its body, which follows
}

// trusting is the baseline archive: it asks the owner and believes it.
type trusting struct {
	owner ring.Contact
	open  func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
}

func (tr trusting) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	rep, _, err := tr.ask(ctx, Request{Op: "versions", URL: url})
	return rep.Versions, err
}

func (tr trusting) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	rep, body, err := tr.ask(ctx, Request{Op: "get", URL: url, Time: t})
	if err != nil {
		return archive.Version{}, nil, err
	}
	if rep.NotFound {
		return archive.Version{}, nil, archive.ErrNotFound
	}
	if id.Sum(body) != rep.Version.Digest {
		return archive.Version{}, nil, archive.ErrCorrupt
	}
	rep.Capture.Body = body
	return rep.Version, rep.Capture, nil
}

func (tr trusting) ask(ctx context.Context, req Request) (trustReply, []byte, error) {
	s, err := tr.open(ctx, tr.owner, trustProtocol)
	if err != nil {
		return trustReply{}, nil, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, req); err != nil {
		return trustReply{}, nil, err
	}
	_ = s.CloseWrite()
	r := bufio.NewReader(s)
	var rep trustReply
	if err := wire.ReadJSON(r, maxHeaderFrame, &rep); err != nil {
		return rep, nil, err
	}
	if rep.Capture == nil {
		return rep, nil, nil
	}
	body, err := wire.ReadFrame(r, maxBodyFrame)
	return rep, body, err
}

// trustHandle serves the baseline protocol from sv's store.
func trustHandle(sv *Service) network.StreamHandler {
	return func(s network.Stream) {
		defer s.Close()
		var req Request
		if err := wire.ReadJSON(bufio.NewReader(s), maxRequestFrame, &req); err != nil {
			s.Reset()
			return
		}
		ctx := context.Background()
		var rep trustReply
		var body []byte
		if req.Op == "versions" {
			rep.Versions, _ = sv.Store.Versions(ctx, req.URL)
		} else if v, c, err := sv.localGet(ctx, req.URL, req.Time); err != nil {
			rep.NotFound = true
		} else {
			body, c.Body = c.Body, nil
			rep.Version, rep.Capture = v, c
		}
		if err := wire.WriteJSON(s, rep); err == nil && rep.Capture != nil {
			_ = wire.WriteFrame(s, body)
		}
	}
}

// BenchmarkVerifiedReads measures what verifying reads costs: replays of
// a page through a gateway whose archive is resolve (every capture from
// the owner verified: record, signature, purge book; versions merged
// from every holder, each signature verified) against the same gateway
// over the trusting 1.0.0 path, in the same run, interleaved: p50 of one
// replay at a time and replays/s of 8 readers at once, p50 of the page's
// timemap (its versions), and their ratios (verified / baseline). Two nodes on a mock network; the page's owner
// holds 10 versions of it; the asking node none.
//
//	go test -run '^$' -bench VerifiedReads -benchtime 3x ./node/resolve/
func BenchmarkVerifiedReads(b *testing.B) {
	for _, size := range []int{32 << 10, 512 << 10} {
		b.Run(fmt.Sprintf("page=%dKiB", size>>10), func(b *testing.B) { benchReads(b, size) })
	}
}

func benchReads(b *testing.B, size int) {
	svcs, hs := services(b, nil, nil)
	a, owner := svcs[0], svcs[1]
	const u = "http://h.example/page"
	body := []byte("<html><body>" + strings.Repeat("<p>archived text</p>", size/20) + "</body></html>")
	for d := range 10 {
		c := archive.Capture{URL: u, Time: t0.Add(time.Duration(d) * 24 * time.Hour), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: append(body, byte('0'+d))}
		if _, _, err := owner.Store.(*archive.Store).Put(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
	hs[1].SetStreamHandler(trustProtocol, trustHandle(owner))
	gw := func(arch gateway.Archive) *gateway.Server {
		s, err := gateway.New(gateway.Config{Archive: arch, UIOrigin: ":1", ContentOrigin: ":2"})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	paths := []struct {
		name  string
		gw    *gateway.Server
		lat   []time.Duration // replays
		tmLat []time.Duration // timemaps
		n     int
		busy  time.Duration
	}{
		{name: "baseline", gw: gw(trusting{owner: owner.Self, open: a.Open})},
		{name: "verified", gw: gw(a)},
	}
	timemap := func(h http.Handler) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/timemap/link/"+u, nil))
		if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "memento\"") != 10 {
			b.Fatalf("timemap: %d\n%s", rec.Code, rec.Body)
		}
	}
	replay := func(h http.Handler, d int) {
		ts := gateway.FormatTimestamp(t0.Add(time.Duration(d) * 24 * time.Hour))
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:2/web/"+ts+"if_/"+u, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Body.Len() < size {
			b.Fatalf("replay: %d, %d bytes", rec.Code, rec.Body.Len())
		}
	}
	const seq, conc, readers = 100, 200, 8
	b.ResetTimer()
	for range b.N {
		for i := range paths {
			p := &paths[i]
			h := p.gw.Content()
			for j := range seq {
				start := time.Now()
				replay(h, j%10)
				p.lat = append(p.lat, time.Since(start))
			}
			for range seq / 4 {
				start := time.Now()
				timemap(p.gw.UI())
				p.tmLat = append(p.tmLat, time.Since(start))
			}
			start := time.Now()
			var wg sync.WaitGroup
			for r := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := r; j < conc; j += readers {
						replay(h, j%10)
					}
				}()
			}
			wg.Wait()
			p.busy += time.Since(start)
			p.n += conc
		}
	}
	b.StopTimer()
	var p50, tm50, rate [2]float64
	for i, p := range paths {
		slices.Sort(p.lat)
		slices.Sort(p.tmLat)
		p50[i] = float64(p.lat[len(p.lat)/2].Microseconds())
		tm50[i] = float64(p.tmLat[len(p.tmLat)/2].Microseconds())
		rate[i] = float64(p.n) / p.busy.Seconds()
		b.ReportMetric(p50[i], "replay-p50-µs-"+p.name)
		b.ReportMetric(tm50[i], "timemap-p50-µs-"+p.name)
		b.ReportMetric(rate[i], "replays/s-"+p.name)
	}
	b.ReportMetric(p50[1]/p50[0], "replay-p50-ratio")
	b.ReportMetric(tm50[1]/tm50[0], "timemap-p50-ratio")
	b.ReportMetric(rate[1]/rate[0], "replays/s-ratio")
	if a.Stats().Rejected != 0 {
		b.Fatalf("%d genuine answers rejected", a.Stats().Rejected)
	}
}
