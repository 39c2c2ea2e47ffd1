package exchange

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

var testInfo = WARCInfo{Filename: "x.warc.gz", Software: "herod (devel)", Operator: "https://ops.herod.test/",
	IsPartOf: "herod export --host site.example", Description: "every capture of site.example", Date: t0}

// TestWARCInfo reads back the warcinfo record WriteWARCInfo writes: its
// own gzip member, WARC-Type warcinfo, and the fields given.
func TestWARCInfo(t *testing.T) {
	var b bytes.Buffer
	n, err := WriteWARCInfo(&b, testInfo)
	if err != nil || n != int64(b.Len()) {
		t.Fatalf("WriteWARCInfo: %d bytes reported, %d written, %v", n, b.Len(), err)
	}
	var got []*archive.Record
	if err := Records(&b, func(m *Member) error { got = append(got, m.Record); return nil }); err != nil || len(got) != 1 {
		t.Fatalf("%d records, %v", len(got), err)
	}
	h := got[0].Header
	if h.Get("Warc-Type") != "warcinfo" || h.Get("Warc-Filename") != "x.warc.gz" || h.Get("Content-Type") != "application/warc-fields" ||
		h.Get("Warc-Date") != "2026-03-01T10:00:00Z" || !strings.HasPrefix(h.Get("Warc-Record-Id"), "<urn:uuid:") {
		t.Errorf("header %v", h)
	}
	for _, f := range []string{"software: herod (devel)\r\n", "format: WARC File Format 1.1\r\n", "operator: https://ops.herod.test/\r\n",
		"isPartOf: herod export --host site.example\r\n", "description: every capture of site.example\r\n"} {
		if !bytes.Contains(got[0].Block, []byte(f)) {
			t.Errorf("block lacks %q:\n%s", f, got[0].Block)
		}
	}
}

// TestWACZWARCInfoFirst: with Info the package's WARC starts with one
// warcinfo record (the stream's own left out) and the index still points
// at every record.
func TestWACZWARCInfoFirst(t *testing.T) {
	s := fixtureStore(t)
	var in bytes.Buffer
	if _, err := WriteWARCInfo(&in, WARCInfo{Software: "upstream"}); err != nil {
		t.Fatal(err)
	}
	in.Write(exportWARC(t, s))
	var out bytes.Buffer
	z := NewWACZ(&out, WACZOptions{Info: &testInfo})
	if _, err := z.AddWARC(&in); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	files := unzipAll(t, out.Bytes())
	var types []string
	if err := Records(bytes.NewReader(files[WARCPath]), func(m *Member) error { types = append(types, m.Type()); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(types) != 6 || types[0] != "warcinfo" || strings.Count(strings.Join(types, " "), "warcinfo") != 1 {
		t.Fatalf("records %v, want one warcinfo first and the 5 of the fixture", types)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(files[IndexPath])), "\n") {
		var f map[string]string
		if err := json.Unmarshal([]byte(strings.SplitN(l, " ", 3)[2]), &f); err != nil {
			t.Fatal(err)
		}
		off, _ := strconv.Atoi(f["offset"])
		n, _ := strconv.Atoi(f["length"])
		var u string
		if err := Records(bytes.NewReader(files[WARCPath][off:off+n]), func(m *Member) error { u = m.URL(); return nil }); err != nil || u != f["url"] {
			t.Errorf("line %q: record %q at its location, %v", l, u, err)
		}
	}
}

// TestWACZMainPage: the main page is the seed given, else the page
// captured first, not the alphabetically first.
func TestWACZMainPage(t *testing.T) {
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, Signer: newSigner()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, u := range []string{"http://b.example/", "http://a.example/", "http://c.example/"} {
		c := archive.Capture{URL: u, Time: t0.Add(time.Duration(i) * time.Second), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<title>" + u + "</title>")}
		if _, _, err := s.Put(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	warc := exportWARC(t, s)
	for _, c := range []struct{ seed, want string }{
		{"", "http://b.example/"},
		{"http://c.example/", "http://c.example/"},
		{"http://not.archived.example/", "http://b.example/"},
	} {
		var out bytes.Buffer
		z := NewWACZ(&out, WACZOptions{MainPage: c.seed})
		if _, err := z.AddWARC(bytes.NewReader(warc)); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		var pkg Package
		if err := json.Unmarshal(unzipAll(t, out.Bytes())[PackagePath], &pkg); err != nil {
			t.Fatal(err)
		}
		if pkg.MainPageURL != c.want {
			t.Errorf("seed %q: mainPageURL %q, want %q", c.seed, pkg.MainPageURL, c.want)
		}
	}
}

func unzipAll(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		files[f.Name] = readEntry(t, f)
	}
	return files
}
