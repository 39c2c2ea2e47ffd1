package exchange

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/warciotest"
)

// TestRequestRecordsSkipped: the request records of an export are kept in
// a WACZ's WARC and by the outlinks converter, and left out wherever
// captures are indexed or counted: the CDXJ index, the WACZ's index and
// pages, the links and text exports give what they give for the same
// captures without request heads.
func TestRequestRecordsSkipped(t *testing.T) {
	plain := exportWARC(t, fixtureStoreWith(t, false))
	withReq := exportWARC(t, fixtureStoreWith(t, true))
	types := func(warc []byte) map[string]int {
		n := map[string]int{}
		if err := Records(bytes.NewReader(warc), func(m *Member) error { n[m.Type()]++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := types(withReq); n["request"] != 4 || n["response"] != 4 || n["revisit"] != 1 {
		t.Fatalf("export with request heads holds %v, want 4 requests, 4 responses, 1 revisit", n)
	}

	// The CDXJ index lists the same captures, each at its response.
	index := func(warc []byte) *Index {
		x := &Index{Filename: "x.warc.gz"}
		if err := Records(bytes.NewReader(warc), func(m *Member) error { return x.Add(m, m.Offset) }); err != nil {
			t.Fatal(err)
		}
		return x
	}
	var a, b bytes.Buffer
	index(plain).WriteTo(&a)
	index(withReq).WriteTo(&b)
	if got, want := withoutLocations(b.String()), withoutLocations(a.String()); got != want {
		t.Fatalf("index with request records:\n%s\nwant the same captures as:\n%s", got, want)
	}
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		off, _ := strconv.Atoi(fieldOf(l, "offset"))
		if err := Records(bytes.NewReader(withReq[off:]), func(m *Member) error {
			if m.Type() == "request" {
				t.Errorf("index line %q points at a request record", l)
			}
			return io.EOF
		}); err != io.EOF {
			t.Fatal(err)
		}
	}

	// Links and text are those of the captures.
	for name, conv := range map[string]func(io.Reader, io.Writer, func(*Member)) (BulkStats, error){"links": Links, "text": Texts} {
		var x, y bytes.Buffer
		sx, err1 := conv(bytes.NewReader(plain), &x, nil)
		sy, err2 := conv(bytes.NewReader(withReq), &y, nil)
		if err1 != nil || err2 != nil || sx != sy || !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("%s with request records: %+v %v, want %+v %v and the same output", name, sy, err2, sx, err1)
		}
	}

	// Outlinks: the same metadata records, after the responses.
	var ox, oy bytes.Buffer
	sx, err1 := WithOutlinks(bytes.NewReader(plain), &ox, nil)
	sy, err2 := WithOutlinks(bytes.NewReader(withReq), &oy, nil)
	if err1 != nil || err2 != nil || sx.Metadata != sy.Metadata || sy.Records != sx.Records+4 {
		t.Fatalf("outlinks with request records: %+v %v, want %+v %v with 4 more records", sy, err2, sx, err1)
	}

	// The WACZ keeps the request records in its WARC, not in its index
	// or pages.
	pack := func(warc []byte) ([]byte, WACZStats) {
		var out bytes.Buffer
		z := NewWACZ(&out, WACZOptions{Title: "fixture"})
		st, err := z.AddWARC(bytes.NewReader(warc))
		if err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), st
	}
	zp, stp := pack(plain)
	zq, stq := pack(withReq)
	if stp.Responses != stq.Responses || stp.Revisits != stq.Revisits || stp.Pages != stq.Pages {
		t.Fatalf("WACZ stats with request records %+v, without %+v", stq, stp)
	}
	entries := func(data []byte) map[string][]byte {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, f := range zr.File {
			out[f.Name] = readEntry(t, f)
		}
		return out
	}
	ep, eq := entries(zp), entries(zq)
	if n := types(eq[WARCPath]); n["request"] != 4 {
		t.Fatalf("WACZ WARC holds %v, want its 4 request records", n)
	}
	if got, want := withoutLocations(string(eq[IndexPath])), withoutLocations(string(ep[IndexPath])); got != want {
		t.Fatalf("WACZ index with request records:\n%s\nwant:\n%s", got, want)
	}
	if got, want := pageURLs(eq[PagesPath]), pageURLs(ep[PagesPath]); !slices.Equal(got, want) {
		t.Fatalf("WACZ pages %q, want %q", got, want)
	}

	// warcio.js reads the packaged WARC and its indexer locates the same
	// records as the package's index.
	tool := warciotest.Setup(t)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "data.warc.gz"), eq[WARCPath], 0o644))
	sum := tool.Validate(t, filepath.Join(dir, "data.warc.gz"))
	if len(sum.Errors) > 0 || sum.Requests != 4 || sum.Responses != 4 {
		t.Fatalf("warcio: %+v", sum)
	}
	if got, want := locations(t, eq[IndexPath]), locations(t, tool.CDXIndex(t, dir, "data.warc.gz")); !slices.Equal(got, want) {
		t.Errorf("index locations differ from warcio's:\nours   %v\nwarcio %v", got, want)
	}
	// With outlinks too.
	must(t, os.WriteFile(filepath.Join(dir, "out.warc.gz"), oy.Bytes(), 0o644))
	if sum := tool.Validate(t, filepath.Join(dir, "out.warc.gz")); len(sum.Errors) > 0 || sum.Requests != 4 {
		t.Fatalf("warcio, outlinks: %+v", sum)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// withoutLocations drops the offset and length fields of CDXJ lines, which
// differ where request records take room.
func withoutLocations(cdxj string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(cdxj), "\n") {
		for _, f := range []string{"offset", "length"} {
			l = strings.Replace(l, `"`+f+`":"`+fieldOf(l, f)+`"`, "", 1)
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// fieldOf returns the string field name of a CDXJ line's JSON.
func fieldOf(line, name string) string {
	_, v, ok := strings.Cut(line, `"`+name+`":"`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}

// pageURLs lists the url fields of a pages.jsonl.
func pageURLs(pages []byte) []string {
	var out []string
	for _, l := range strings.Split(string(pages), "\n") {
		if u := fieldOf(l, "url"); u != "" {
			out = append(out, u)
		}
	}
	return out
}
