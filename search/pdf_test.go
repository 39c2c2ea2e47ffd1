package search_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/search"
	"github.com/herod-archive/herod/search/searchtest"
)

var twoPages = []searchtest.PDFPage{
	{Lines: []string{"Annual report of the lighthouse keepers", "The quixotry of (parenthesized) fog horns"}, Kerned: []string{"kerned", "words", "apart"}},
	{Lines: []string{"Second page mentions zeppelinfield only here"}},
}

func TestExtractPDF(t *testing.T) {
	for _, tc := range []struct {
		name, title string
		compress    bool
		wantTitle   string
	}{
		{"titled", "Lighthouse Report 1911", false, "Lighthouse Report 1911"},
		{"compressed", "Lighthouse Report 1911", true, "Lighthouse Report 1911"},
		{"untitled: first line", "", true, "Annual report of the lighthouse keepers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := search.ExtractDoc("http://a.example/r.pdf", 200, "application/pdf", searchtest.PDF(tc.title, tc.compress, twoPages...))
			if err != nil {
				t.Fatal(err)
			}
			if d.Title != tc.wantTitle {
				t.Errorf("title %q, want %q", d.Title, tc.wantTitle)
			}
			for _, want := range []string{"lighthouse keepers The quixotry of (parenthesized) fog horns", "kerned words apart", "zeppelinfield"} {
				if !strings.Contains(d.Text, want) {
					t.Errorf("text %q lacks %q", d.Text, want)
				}
			}
		})
	}
}

// TestExtractPDFBroken: a broken PDF is ErrUnreadable, never a panic or
// a hang, whatever part of it is broken.
func TestExtractPDFBroken(t *testing.T) {
	good := searchtest.PDF("T", true, twoPages...)
	xref := bytes.LastIndex(good, []byte("xref\n"))
	stream := bytes.Index(good, []byte("stream\n")) + len("stream\n")
	corrupt := func(at int, with string) []byte {
		b := bytes.Clone(good)
		copy(b[at:], with)
		return b
	}
	cases := map[string][]byte{
		"empty":          nil,
		"not a pdf":      []byte("<html>hello</html>"),
		"header only":    []byte("%PDF-1.4\n"),
		"truncated":      good[:len(good)/2],
		"no trailer":     good[:xref],
		"bad xref":       corrupt(xref, "xrex"),
		"bad startxref":  bytes.Replace(good, []byte("startxref\n"), []byte("startxref\n9"), 1),
		"garbled stream": corrupt(stream, "\x00\x01garbage!"),
		// The page tree (object 2) lists itself: beside a page, or alone.
		"cyclic page tree": bytes.Replace(good, []byte("/Kids [6 0 R 8 0 R]"), []byte("/Kids [2 0 R 8 0 R]"), 1),
		"pageless cycle":   bytes.Replace(good, []byte("/Kids [6 0 R 8 0 R]"), []byte("/Kids [2 0 R 2 0 R]"), 1),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			d, err := search.ExtractDoc("http://a.example/x.pdf", 200, "application/pdf", body)
			t.Logf("text %q, error %v", d.Text, err)
			if err == nil {
				// A file whose damage spares some pages may give their text.
				if d.Text == "" {
					t.Errorf("no error and no text")
				}
				return
			}
			if !errors.Is(err, search.ErrUnreadable) {
				t.Errorf("error %v is not ErrUnreadable", err)
			}
		})
	}
}

// TestExtractPDFCorrupted: random corruptions of a PDF (bytes changed,
// the file cut) end in text or ErrUnreadable, never a panic, each well
// within the deadline.
func TestExtractPDFCorrupted(t *testing.T) {
	seed := searchtest.PDF("Title", false, twoPages...)
	r := rand.New(rand.NewPCG(1, 2))
	var worst time.Duration
	unreadable := 0
	const n = 1000
	for range n {
		b := bytes.Clone(seed)
		for range 1 + r.IntN(4) {
			b[r.IntN(len(b))] = byte(r.IntN(256))
		}
		if r.IntN(4) == 0 {
			b = b[:r.IntN(len(b))]
		}
		start := time.Now()
		_, err := search.ExtractDoc("http://a.example/f.pdf", 200, "application/pdf", b)
		worst = max(worst, time.Since(start))
		if err != nil {
			if !errors.Is(err, search.ErrUnreadable) {
				t.Fatalf("error %v is not ErrUnreadable", err)
			}
			unreadable++
		}
	}
	t.Logf("%d corruptions: %d unreadable, slowest %v", n, unreadable, worst)
}

func TestExtractPDFLimits(t *testing.T) {
	body := searchtest.PDF("T", true, twoPages...)
	day := time.Minute
	d, err := search.ExtractPDFWithin(body, len(body), 1, 1<<20, day)
	if err != nil || !strings.Contains(d.Text, "quixotry") || strings.Contains(d.Text, "zeppelinfield") {
		t.Errorf("one page: %q, %v", d.Text, err)
	}
	for name, tc := range map[string]struct {
		maxBytes int
		maxRead  int64
		deadline time.Duration
	}{
		"too large":     {len(body) - 1, 1 << 20, day},
		"read budget":   {len(body), 64, day},
		"past deadline": {len(body), 1 << 20, time.Nanosecond},
	} {
		start := time.Now()
		_, err := search.ExtractPDFWithin(body, tc.maxBytes, 10, tc.maxRead, tc.deadline)
		if !errors.Is(err, search.ErrUnreadable) {
			t.Errorf("%s: error %v, want ErrUnreadable", name, err)
		}
		if time.Since(start) > 30*time.Second {
			t.Errorf("%s: took %v", name, time.Since(start))
		}
	}
}

// TestPDFSearched: a PDF capture is indexed and found by a word only it
// holds, with its document title and a marked snippet; a broken one is
// skipped and counted, and the indexing goes on.
func TestPDFSearched(t *testing.T) {
	f := newFixture(t, 20)
	ctx := context.Background()
	ix := &search.Indexer{Archive: f.arc, Sink: search.StoreSink{Store: f.st}, Docs: f.st}
	at := f.c.Day(4).Add(2 * time.Hour)
	put := func(url string, body []byte) {
		t.Helper()
		c := archive.Capture{URL: url, Time: f.c.Day(4).Add(time.Hour), Status: 200,
			Header: http.Header{"Content-Type": {"application/pdf"}}, Body: body}
		if _, _, err := f.arc.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	put("http://docs.example/report.pdf", searchtest.PDF("Lighthouse Report 1911", true, twoPages...))
	put("http://docs.example/broken.pdf", []byte("%PDF-1.4\nzeppelinfield but no structure\n%%EOF\n"))
	var st search.IndexStats
	for _, u := range []string{"http://docs.example/report.pdf", "http://docs.example/broken.pdf"} {
		s, err := ix.IndexURL(ctx, u, false)
		if err != nil {
			t.Fatalf("index %s: %v", u, err)
		}
		st.Add(s)
	}
	if st.Versions != 1 || st.Unreadable != 1 {
		t.Errorf("indexed %d, unreadable %d; want 1 and 1", st.Versions, st.Unreadable)
	}
	r, err := f.eng.Search(ctx, search.Request{Query: "zeppelinfield", At: at})
	must(t, err)
	if len(r.Results) != 1 || r.Results[0].URL != "http://docs.example/report.pdf" {
		t.Fatalf("results %+v, want the report alone", r.Results)
	}
	res := r.Results[0]
	if res.Title != "Lighthouse Report 1911" || !strings.Contains(res.Snippet, "<mark>zeppelinfield</mark>") {
		t.Errorf("title %q snippet %q", res.Title, res.Snippet)
	}
	if got := f.urls(t, `"fog horns" lighthouse`, at, 10); len(got) != 1 {
		t.Errorf("phrase in the PDF: %v", got)
	}
}

func FuzzExtractPDF(f *testing.F) {
	f.Add(searchtest.PDF("Title", false, twoPages...))
	f.Add(searchtest.PDF("", true, twoPages...))
	f.Add([]byte("%PDF-1.4\n%%EOF\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := search.ExtractDoc("http://a.example/f.pdf", 200, "application/pdf", body)
		if err != nil && !errors.Is(err, search.ErrUnreadable) {
			t.Fatalf("error %v is not ErrUnreadable", err)
		}
		if err == nil && (!utf8.ValidString(d.Title) || !utf8.ValidString(d.Text)) {
			t.Fatalf("invalid UTF-8")
		}
	})
}

// BenchmarkExtractPDF extracts a 50-page compressed PDF of 40 lines a
// page: the CPU a PDF page costs the indexer, against an HTML page of
// the same words.
func BenchmarkExtractPDF(b *testing.B) {
	c := searchtest.New(1, 50)
	var pages []searchtest.PDFPage
	var words []string
	for _, p := range c.Pages {
		w := strings.Fields(p.Body)
		var lines []string
		for i := 0; i+8 <= len(w) && len(lines) < 40; i += 8 {
			lines = append(lines, strings.Join(w[i:i+8], " "))
		}
		pages = append(pages, searchtest.PDFPage{Lines: lines})
		words = append(words, lines...)
	}
	body := searchtest.PDF("Benchmark", true, pages...)
	html := searchtest.HTML("Benchmark", strings.Join(words, " "))
	var pdfTime, htmlTime time.Duration
	for b.Loop() {
		start := time.Now()
		d, err := search.ExtractDoc("http://a.example/b.pdf", 200, "application/pdf", body)
		pdfTime += time.Since(start)
		if err != nil || len(d.Text) < 1000 {
			b.Fatalf("%d bytes of text, %v", len(d.Text), err)
		}
		start = time.Now()
		search.ExtractDoc("http://a.example/b.html", 200, "text/html", html)
		htmlTime += time.Since(start)
	}
	b.ReportMetric(float64(pdfTime.Microseconds())/float64(b.N)/float64(len(pages)), "µs/pdf-page")
	b.ReportMetric(float64(pdfTime)/float64(htmlTime), "pdf/html")
	b.ReportMetric(float64(len(body))/float64(len(pages)), "pdf-bytes/page")
}
