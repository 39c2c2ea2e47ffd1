package sim

import (
	"context"
	"crypto/sha1"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/resolve"
	nodesearch "github.com/herod-archive/herod/node/search"
	fts "github.com/herod-archive/herod/search"
)

// realWire sizes the search messages with the protocols' own types and
// encoders: node/search's Request and Reply (one wire.WriteJSON frame
// each, as Service.call and Serve send them), and node/resolve's Request
// and Reply frames followed by the capture's record, one gzip member as
// archive.EncodeRecord makes it (what a holder's Store.ReadFile sends).
type realWire struct{}

func (realWire) PostingQuery(q fts.PostingQuery, l fts.PostingList) (int, int) {
	return FrameSize(nodesearch.Request{Op: nodesearch.OpQuery, Query: &q}), FrameSize(nodesearch.Reply{List: &l})
}

func (realWire) Capture(url string, t time.Time, title, text string) (int, int) {
	var page strings.Builder
	fmt.Fprintf(&page, "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>%s</title></head>\n<body><h1>%s</h1>\n", title, title)
	words := strings.Fields(text)
	for len(words) > 0 {
		n := min(len(words), 80)
		fmt.Fprintf(&page, "<p>%s.</p>\n", strings.Join(words[:n], " "))
		words = words[n:]
	}
	page.WriteString("</body></html>\n")
	body := []byte(page.String())
	h := http.Header{}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Date", t.Format(http.TimeFormat))
	h.Set("Last-Modified", t.Add(-72*time.Hour).Format(http.TimeFormat))
	h.Set("Etag", fmt.Sprintf("%q", fmt.Sprintf("%x", sha1.Sum(body))[:16]))
	h.Set("Server", "nginx")
	peer := strings.Repeat("p", PeerIDLen)
	c := &archive.Capture{URL: url, Time: t, Status: 200, Header: h, Body: body, Peer: peer, Signature: make([]byte, 64)}
	rec, err := archive.EncodeRecord(c)
	if err != nil {
		panic(err) // the capture is well formed
	}
	v := archive.Version{URL: url, Key: id.OfString(url), Digest: id.ID(sha1.Sum(body)), Day: t.Unix() / 86400, Time: t,
		Status: 200, ContentType: "text/html", Length: int64(len(body)), Peer: peer,
		File: "segments/00000042.warc.gz", Offset: 123_456_789, Size: int64(len(rec))}
	var n byteCount
	_ = wire.WriteFrame(&n, rec)
	return FrameSize(resolve.Request{Op: "get", URL: url, Time: t}), FrameSize(resolve.Reply{Version: v, Record: true}) + int(n)
}

// TestSearchCost runs the search model: a small ring by default
// (seconds), 100 and 1,000 real nodes with -sim. It checks that every
// lookup stays within log2 of the virtual servers in hops, that the
// messages fit what the model allows, and prints the table of
// docs/search.md.
func TestSearchCost(t *testing.T) {
	sizes := []Size{{32 * 4, 4}}
	cfg := SearchConfig{Queries: 100, Seed: 1, Wire: realWire{}}
	sc := Config{}
	if *full {
		sizes = []Size{{100 * 4, 4}, {1000 * 4, 4}}
		cfg.Queries = 1000
		debug.SetGCPercent(400)
		sc.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	rep, err := RunSearch(context.Background(), sizes, cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + rep.Markdown())
	if len(rep.Rows) != 3*len(sizes) {
		t.Fatalf("%d rows for %d sizes", len(rep.Rows), len(sizes))
	}
	c := rep.Config
	// A first reply holds at most Limit postings; one posting is at most
	// its URL, key, term and numbers in JSON.
	maxReply := c.Limit*400 + 1000
	for _, x := range rep.Rows {
		name := fmt.Sprintf("%d nodes, %d terms", x.Nodes, x.Terms)
		if x.MaxLookupHops > int(math.Ceil(x.LookupHopBound)) {
			t.Errorf("%s: a lookup took %d hops, more than log2 N = %.1f", name, x.MaxLookupHops, x.LookupHopBound)
		}
		// Each term: its owner and the walk to K holders, once or twice;
		// each result: its owner.
		if bound := float64(2*x.Terms*c.K + c.Results); x.Lookups > bound || x.Lookups < 1 {
			t.Errorf("%s: %.1f lookups a query, outside [1, %.0f]", name, x.Lookups, bound)
		}
		if bound := float64(2*askers*x.Terms + c.Results); x.Requests > bound {
			t.Errorf("%s: %.1f requests a query, more than %.0f", name, x.Requests, bound)
		}
		if x.PostingBytes > float64(2*askers*x.Terms*maxReply) || x.PostingBytes <= 0 {
			t.Errorf("%s: %.0f posting bytes a query", name, x.PostingBytes)
		}
		if x.Verified > float64(c.Results) {
			t.Errorf("%s: %.1f captures verified a query", name, x.Verified)
		}
		if x.HopsP50 > x.HopsP99 || x.BytesP50 > x.BytesP99 || x.BytesP50 <= 0 {
			t.Errorf("%s: percentiles out of order: hops %d / %d, bytes %d / %d", name, x.HopsP50, x.HopsP99, x.BytesP50, x.BytesP99)
		}
		if x.Terms == 1 && x.Second != 0 {
			t.Errorf("%s: a one-term query asked again", name)
		}
	}
}

// TestCorpusModel: document frequencies fall with rank, stay within the
// pages, and the drawn ranks follow the frequencies.
func TestCorpusModel(t *testing.T) {
	c := newCorpus(CorpusModel{}, 1_000_000)
	first := c.m.StopWords + 1
	if df := c.df(first); df > c.n || df < c.n/4 {
		t.Errorf("df of the most frequent content term %d of %d pages", df, c.n)
	}
	if a, b := c.df(first+10), c.df(first+10_000); a <= b {
		t.Errorf("df does not fall with rank: %d, %d", a, b)
	}
	if df := c.df(c.m.Vocabulary); df < 1 || df > 100 {
		t.Errorf("df of the rarest term %d", df)
	}
	// The share of draws of the first content rank matches its probability.
	rng := newCorpusRand(7)
	hits := 0
	const draws = 200_000
	for range draws {
		if c.draw(rng) == first {
			hits++
		}
	}
	if got, want := float64(hits)/draws, c.prob(first); math.Abs(got-want) > 0.1*want {
		t.Errorf("first rank drawn %.4f of the time, probability %.4f", got, want)
	}
}

func newCorpusRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// TestPostingSizes reports a simulated posting's bytes in a query reply
// (JSON, as node/search answers) and in its binary form
// (search.Posting.AppendBinary, before compression), for the docs'
// comparison.
func TestPostingSizes(t *testing.T) {
	c := newCorpus(CorpusModel{}, 10_000_000)
	var l fts.PostingList
	var bin []byte
	for d := range int64(1000) {
		p := c.posting(c.m.StopWords+1+int(d%50), d*9973, 1_700_000_000_000)
		l.Postings = append(l.Postings, p)
		bin = p.AppendBinary(bin)
	}
	empty := FrameSize(nodesearch.Reply{List: &fts.PostingList{}})
	js := float64(FrameSize(nodesearch.Reply{List: &l})-empty) / 1000
	b := float64(len(bin)) / 1000
	t.Logf("a posting in a query reply: %.0f bytes of JSON; binary: %.0f bytes (AppendBinary, before compression)", js, b)
	if b <= 0 || js <= b {
		t.Errorf("JSON %.0f bytes, binary %.0f", js, b)
	}
}
