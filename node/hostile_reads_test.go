package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/export"
	"github.com/herod-archive/herod/node/identity"
	"github.com/herod-archive/herod/node/query"
	"github.com/herod-archive/herod/node/resolve"
)

// hostileReadHeapBound bounds the growth of the process's heap in use
// (the ring of 3 nodes: victim, hostile member, honest member) over three
// passes of one attack of TestHostileReads, measured after a GC: what is
// refused leaves nothing behind.
const hostileReadHeapBound = 8 << 20

// readsInvented marks every body a hostile member makes up.
const readsInvented = "INVENTED BY A HOSTILE MEMBER"

// readsLyingSigner signs with one key in the name of another peer: a record
// forged in an honest member's name.
type readsLyingSigner struct {
	name string
	key  identity.Signer
}

func (s readsLyingSigner) Peer() string                    { return s.name }
func (s readsLyingSigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg) }

// readsForgery is a store of made-up captures of each URL, dated 1999 and
// recent (recent enough for the witness rule to show them: only
// verification keeps them out), as a hostile member serves them:
// unsigned, or signed by its own key in an honest member's name.
func readsForgery(t *testing.T, signer archive.Signer, recent time.Time, urls ...string) *archive.Store {
	t.Helper()
	o := archive.Options{NoSync: true}
	if signer != nil {
		o.Signer = signer
	}
	st, err := archive.Open(filepath.Join(t.TempDir(), "forgery"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, u := range urls {
		for _, when := range []time.Time{time.Date(1999, 6, 1, 0, 0, 0, 0, time.UTC), recent} {
			c := archive.Capture{URL: u, Time: when, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
				Body: []byte("<p>" + readsInvented + " " + u + " " + when.String() + "</p>")}
			if _, _, err := st.Put(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st
}

// readsBackDated is a store of captures of each URL dated 2006, signed
// by signer: what a member that back-dates its own captures lists.
func readsBackDated(t *testing.T, signer archive.Signer, urls ...string) *archive.Store {
	t.Helper()
	st, err := archive.Open(filepath.Join(t.TempDir(), "backdated"), archive.Options{NoSync: true, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, u := range urls {
		c := archive.Capture{URL: u, Time: time.Date(2006, 3, 1, 0, 0, 0, 0, time.UTC), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<p>" + readsInvented + " in 2006</p>")}
		if _, _, err := st.Put(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// readsServeArchive replaces n's handler of the archive protocol with f, which
// answers each request with a reply and, for a capture, its record.
func readsServeArchive(n *Node, asked *atomic.Int64, f func(req resolve.Request) (resolve.Reply, []byte)) {
	n.host.SetStreamHandler(archiveProtocol, func(s network.Stream) {
		defer s.Close()
		asked.Add(1)
		var req resolve.Request
		if err := wire.ReadJSON(bufio.NewReader(s), 64<<10, &req); err != nil {
			s.Reset()
			return
		}
		rep, rec := f(req)
		if err := wire.WriteJSON(s, rep); err == nil && rep.Record {
			_ = wire.WriteFrame(s, rec)
		}
	})
}

// readsForgedAnswers answers from store st as an honest holder would, with a
// made-up version with a genuine signature of another version added to
// every listing.
func readsForgedAnswers(t *testing.T, st *archive.Store, stolen resolve.SignedVersion) func(req resolve.Request) (resolve.Reply, []byte) {
	return func(req resolve.Request) (resolve.Reply, []byte) {
		ctx := context.Background()
		vs, err := st.Versions(ctx, req.URL)
		if err != nil || len(vs) == 0 {
			return resolve.Reply{NotFound: true}, nil
		}
		if req.Op == "versions" {
			out := []resolve.SignedVersion{stolen}
			out[0].Time, out[0].Day = vs[0].Time, vs[0].Day
			for _, v := range vs {
				c, err := st.Read(ctx, v)
				if err != nil {
					t.Error(err)
					continue
				}
				out = append(out, resolve.SignedVersion{Version: v, Signature: c.Signature})
			}
			return resolve.Reply{Versions: out}, nil
		}
		v, err := st.At(ctx, req.URL, req.Time)
		if err != nil {
			v = vs[0]
		}
		data, err := st.ReadFile(ctx, v.Entry())
		if err != nil {
			t.Error(err)
			return resolve.Reply{Error: err.Error()}, nil
		}
		return resolve.Reply{Version: v, Record: true}, data
	}
}

// readsServeExport replaces n's handler of the query protocol with one that
// answers an export from st.
func readsServeExport(n *Node, st *archive.Store) {
	n.host.SetStreamHandler(queryProtocol, func(s network.Stream) {
		defer s.Close()
		var req query.Request
		if err := wire.ReadJSON(bufio.NewReader(s), 64<<10, &req); err != nil {
			s.Reset()
			return
		}
		_ = export.Serve(context.Background(), st, archive.ExportOptions{Query: req.Query, Revisits: req.Revisits, After: req.After}, s)
	})
}

// readsHeapWatch samples the heap in use until stopped and returns its peak.
func readsHeapWatch() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// readsHeapInuse returns the heap in use after a GC.
func readsHeapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// readsExportRecords returns the response records of a .warc.gz: URL and
// payload of each.
func readsExportRecords(t *testing.T, data []byte) [][2]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	var out [][2]string
	for {
		rec, err := archive.ReadRecord(br)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Header.Get("Warc-Type") == "response" {
			out = append(out, [2]string{rec.Header.Get("Warc-Target-Uri"), string(rec.Block)})
		}
	}
}

// TestHostileReads: a member of the ring runs a modified herod that owns
// URLs and answers the archive and query protocols its own way. Against
// each behaviour, the victim's gateway (its timemap and raw replay, over
// HTTP) and ring-wide export show only captures whose fetcher's
// signature verifies and whose fetcher is not purged; nothing made up is
// served or exported, no genuine version the victim or an honest replica
// holds is hidden, and the process heap in use stays within
// hostileReadHeapBound of where it was after three passes of each.
//
//   - unsigned: versions and captures without signatures, of the URL and
//     of a URL never crawled, dated 1999 and half an hour ago (which the
//     witness rule alone would show);
//   - forged: the same, signed by the hostile member's key in the honest
//     member's name, plus a made-up version carrying the genuine
//     signature of another;
//   - hiding: "not found" for versions the victim and a replica hold;
//   - purge evasion: after the victim's operator purges the member, it
//     answers with its genuine captures: it is not asked and its
//     versions are not shown;
//   - exports: the member's export reply is made of unsigned, then
//     forged, records;
//   - listings: the member lists, for the ring-wide CDX and List, rows
//     that are unsigned, forged, then signed by its own key but dated
//     2006 (which no one witnessed), with their proofs: the victim's
//     CDX and List show only the genuine versions.
func TestHostileReads(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	lr, err := StartLocalRing(ctx, t.TempDir(), 3, Config{VirtualServers: 2, StabilizeInterval: 100 * time.Millisecond,
		Replicas: 3, ReplicationInterval: -1, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	victim, hostile, honest := lr.Nodes[0], lr.Nodes[1], lr.Nodes[2]

	// Two URLs the hostile member owns: one archived, one never crawled.
	var page, never string
	for i := 0; page == "" || never == ""; i++ {
		if i == 10_000 {
			t.Fatal("no URLs the hostile member owns in 10,000 tries")
		}
		u, err := canon.Canonical(fmt.Sprintf("http://h.example/p%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if lr.Owner(id.OfString(u)) != hostile {
			continue
		}
		if page == "" {
			page = u
		} else {
			never = u
		}
	}
	// Genuine versions: the victim holds those of 3 and 2 hours ago, the
	// honest replica 3 and 1, the hostile member 4 (each signed by its
	// holder; recent, so that the witness rule shows them all).
	now := time.Now().UTC().Truncate(time.Second)
	day := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
	forgedAt := now.Add(-30 * time.Minute)
	put := func(n *Node, hours ...int) {
		for _, d := range hours {
			c := archive.Capture{URL: page, Time: day(d), Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
				Body: []byte(fmt.Sprintf("<p>genuine, %d hours ago</p>", d))}
			if _, _, err := n.store.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The member keeps its own version to itself: no push to its
	// replicas (rounds are off), so the victim sees it only through the
	// member's answers.
	hostile.store.OnAdd(nil)
	put(victim, 3, 2)
	put(honest, 3, 1)
	put(hostile, 4)

	var asked atomic.Int64
	gw := victim.GatewayURL()
	replay := victim.ReplayURL()
	fetch := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	// reads checks what the victim's gateway shows of both URLs: the
	// timemap of page lists exactly the days want, and no raw replay
	// serves anything made up.
	reads := func(want ...int) error {
		// The verification itself, under the witness rule.
		vs, err := victim.resolve.Versions(ctx, page)
		if err != nil || len(vs) != len(want) {
			return fmt.Errorf("resolve: %d versions of %s, want %d: %v", len(vs), page, len(want), err)
		}
		for _, v := range vs {
			if v.Time.Year() == 1999 || v.Time.Equal(forgedAt) {
				return fmt.Errorf("resolve: made-up version of %s at %s", page, v.Time)
			}
		}
		if vs, err := victim.resolve.Versions(ctx, never); err != nil || len(vs) != 0 {
			return fmt.Errorf("resolve: %d versions of a URL never crawled: %v", len(vs), err)
		}
		code, tm := fetch(gw + "timemap/link/" + page)
		if code != http.StatusOK {
			return fmt.Errorf("timemap of %s: %d", page, code)
		}
		if strings.Contains(tm, "1999") || strings.Contains(tm, gateway.FormatTimestamp(forgedAt)) {
			return fmt.Errorf("timemap shows a made-up version:\n%s", tm)
		}
		if got := strings.Count(tm, "memento\""); got != len(want) {
			return fmt.Errorf("timemap lists %d versions, want %d (days %v):\n%s", got, len(want), want, tm)
		}
		for _, d := range want {
			if !strings.Contains(tm, day(d).Format("20060102150405")) {
				return fmt.Errorf("timemap misses the genuine version of %d hours ago:\n%s", d, tm)
			}
		}
		code, body := fetch(replay + "web/19990601000000id_/" + page)
		if code != http.StatusOK || strings.Contains(body, readsInvented) || !strings.Contains(body, "genuine") {
			return fmt.Errorf("replay of %s at 1999: %d %.200q", page, code, body)
		}
		if code, body = fetch(replay + "web/" + gateway.FormatTimestamp(forgedAt) + "id_/" + page); code != http.StatusOK || strings.Contains(body, readsInvented) {
			return fmt.Errorf("replay of %s half an hour ago: %d %.200q", page, code, body)
		}
		for _, ts := range []string{"19990601000000", gateway.FormatTimestamp(forgedAt)} {
			code, body = fetch(replay + "web/" + ts + "id_/" + never)
			if code != http.StatusNotFound || strings.Contains(body, readsInvented) {
				return fmt.Errorf("replay of a URL never crawled at %s: %d %.200q", ts, code, body)
			}
		}
		code, tm = fetch(gw + "timemap/link/" + never)
		if code != http.StatusNotFound || strings.Contains(tm, "1999") {
			return fmt.Errorf("timemap of a URL never crawled: %d %.200q", code, tm)
		}
		return nil
	}
	// exports checks the victim's ring-wide export of the host: exactly
	// the genuine responses of the hours want, nothing made up.
	exports := func(want ...int) error {
		var b bytes.Buffer
		if err := (*resolver)(victim).Export(ctx, cdx.Query{URL: "h.example", Match: cdx.MatchHost}, &b, ""); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		recs := readsExportRecords(t, b.Bytes())
		for _, r := range recs {
			if r[0] != page || strings.Contains(r[1], readsInvented) || !strings.Contains(r[1], "genuine") {
				return fmt.Errorf("exported %s: %.200q", r[0], r[1])
			}
		}
		if len(recs) != len(want) {
			return fmt.Errorf("exported %d records, want %d", len(recs), len(want))
		}
		return nil
	}

	// listings checks the victim's ring-wide CDX of the host and its
	// listing (Lister): exactly the genuine versions of the hours want,
	// each with its fetcher.
	listings := func(want ...int) error {
		code, body := fetch(gw + "cdx?url=h.example&matchType=host&output=json&fl=timestamp,original,peer,witnesses")
		var rows [][]string
		if err := json.Unmarshal([]byte(body), &rows); code != http.StatusOK || err != nil {
			return fmt.Errorf("cdx: %d %v %.300q", code, err, body)
		}
		if len(rows) > 0 {
			rows = rows[1:] // the field names
		}
		wantTS := map[string]bool{}
		for _, d := range want {
			wantTS[gateway.FormatTimestamp(day(d))] = true
		}
		for _, r := range rows {
			if r[1] != page || !wantTS[r[0]] || r[2] == "" {
				return fmt.Errorf("cdx lists %q; want only the genuine versions of hours %v", r, want)
			}
		}
		if len(rows) != len(want) {
			return fmt.Errorf("cdx lists %d rows, want %d (hours %v): %q", len(rows), len(want), want, rows)
		}
		vs, err := (*resolver)(victim).List(ctx, cdx.Query{URL: "h.example", Match: cdx.MatchHost})
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		for _, v := range vs {
			if !wantTS[gateway.FormatTimestamp(v.Time)] {
				return fmt.Errorf("list holds %s at %s", v.URL, v.Time)
			}
		}
		if len(vs) != len(want) {
			return fmt.Errorf("list holds %d versions, want %d", len(vs), len(want))
		}
		return nil
	}

	// The control: the hostile member as it should be. Its own genuine
	// version is shown; the others' are merged.
	if err := reads(4, 3, 2, 1); err != nil {
		t.Fatalf("honest ring: %v", err)
	}
	if err := exports(4, 3, 2, 1); err != nil {
		t.Fatalf("honest ring: %v", err)
	}
	if err := listings(4, 3, 2, 1); err != nil {
		t.Fatalf("honest ring: %v", err)
	}

	hostileKey, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	unsigned := readsForgery(t, nil, forgedAt, page, never)
	forged := readsForgery(t, readsLyingSigner{honest.self.Peer, hostileKey}, forgedAt, page, never)
	var stolen resolve.SignedVersion
	{
		vs, err := honest.store.Versions(ctx, page)
		if err != nil || len(vs) == 0 {
			t.Fatalf("honest versions: %v", err)
		}
		c, err := honest.store.Read(ctx, vs[0])
		if err != nil {
			t.Fatal(err)
		}
		stolen = resolve.SignedVersion{Version: vs[0], Signature: c.Signature}
		stolen.Digest = id.Sum([]byte(readsInvented))
	}
	restore := func(p protocol.ID) {
		if err := hostile.kit.Restore(p); err != nil {
			t.Fatal(err)
		}
	}
	normalArchive := func() { restore(archiveProtocol) }
	// The member's own query service, or one listing from another store
	// as an honest member lists its own (rows with their proofs).
	normalQuery := func() { hostile.kit.Remove(queryProtocol); hostile.kit.MustHandle(hostile.query.Spec()) }
	listFrom := func(st *archive.Store) func() {
		return func() {
			normalArchive()
			hostile.kit.Remove(queryProtocol)
			svc := &query.Service{Store: st, Self: hostile.self, Ring: hostile.ring, Open: hostile.openStream, Slots: make(chan struct{}, 8)}
			hostile.kit.MustHandle(svc.Spec())
		}
	}
	// Back-dated captures signed by the member's own key: genuine
	// signatures, dates no one witnessed.
	backDated := readsBackDated(t, hostile.identity, page, never)

	reads321 := func() error { return reads(3, 2, 1) }
	exports321 := func() error { return exports(3, 2, 1) }
	unverifiedReads := func(st TrustStats) int64 { return st.UnverifiedReads }
	unverifiedExports := func(st TrustStats) int64 { return st.UnverifiedExports }
	unverifiedListings := func(st TrustStats) int64 { return st.UnverifiedListings }
	listings321 := func() error { return listings(3, 2, 1) }
	attacks := []struct {
		name  string
		setup func()
		check func() error
		// counted, if set, is the status counter the refusals must raise.
		counted func(TrustStats) int64
	}{
		{"unsigned reads", func() {
			readsServeArchive(hostile, &asked, readsForgedAnswers(t, unsigned, resolve.SignedVersion{Version: stolen.Version}))
		}, reads321, unverifiedReads},
		{"forged reads", func() { readsServeArchive(hostile, &asked, readsForgedAnswers(t, forged, stolen)) }, reads321, unverifiedReads},
		{"hiding versions", func() {
			readsServeArchive(hostile, &asked, func(resolve.Request) (resolve.Reply, []byte) { return resolve.Reply{NotFound: true}, nil })
		}, reads321, nil},
		{"unsigned export records", func() { normalArchive(); readsServeExport(hostile, unsigned) }, exports321, unverifiedExports},
		{"forged export records", func() { readsServeExport(hostile, forged) }, exports321, unverifiedExports},
		{"unsigned listed rows", listFrom(unsigned), listings321, unverifiedListings},
		{"forged listed rows", listFrom(forged), listings321, unverifiedListings},
		{"back-dated listed rows", listFrom(backDated), listings321, unverifiedListings},
		{"purge evasion", func() {
			normalQuery()
			readsServeArchive(hostile, &asked, func(req resolve.Request) (resolve.Reply, []byte) {
				// Honest-looking answers from its store, signed by itself.
				return readsForgedAnswers(t, hostile.store, resolve.SignedVersion{Version: stolen.Version})(req)
			})
			if _, err := victim.Purge(ctx, hostile.self.Peer); err != nil {
				t.Fatal(err)
			}
			asked.Store(0)
		}, func() error {
			if err := reads(3, 2, 1); err != nil {
				return err
			}
			if n := asked.Load(); n != 0 {
				return fmt.Errorf("the purged member was asked %d times", n)
			}
			if err := exports(3, 2, 1); err != nil {
				return err
			}
			return listings(3, 2, 1)
		}, unverifiedExports},
	}
	for _, a := range attacks {
		a.setup()
		trust := victim.Status().Trust
		base := readsHeapInuse()
		stop := readsHeapWatch()
		for pass := range 3 {
			if err := a.check(); err != nil {
				stop()
				t.Fatalf("%s, pass %d: %v", a.name, pass, err)
			}
		}
		peak := stop()
		after := readsHeapInuse()
		now := victim.Status().Trust
		t.Logf("%s: refused; heap in use %.1f MiB before, peak %+.1f MiB, %+.1f MiB after a GC; unverified: %d reads, %d export records, %d listed rows",
			a.name, float64(base)/(1<<20), (float64(peak)-float64(base))/(1<<20), (float64(after)-float64(base))/(1<<20),
			now.UnverifiedReads-trust.UnverifiedReads, now.UnverifiedExports-trust.UnverifiedExports, now.UnverifiedListings-trust.UnverifiedListings)
		if a.counted != nil && a.counted(now) == a.counted(trust) {
			t.Errorf("%s: the refusals were not counted in status", a.name)
		}
		if after > base+hostileReadHeapBound {
			t.Errorf("%s: heap in use grew by %d bytes over 3 passes, bound %d", a.name, after-base, hostileReadHeapBound)
		}
	}
}
