package exchange

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herod-archive/herod/internal/warciotest"
)

// buildWACZ exports the fixture as a WACZ file.
func buildWACZ(t testing.TB, o WACZOptions) ([]byte, WACZStats) {
	t.Helper()
	s := fixtureStore(t)
	var out bytes.Buffer
	z := NewWACZ(&out, o)
	st, err := z.AddWARC(bytes.NewReader(exportWARC(t, s)))
	if err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), st
}

func readEntry(t testing.TB, f *zip.File) []byte {
	t.Helper()
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return b
}

func TestWACZLayout(t *testing.T) {
	data, st := buildWACZ(t, WACZOptions{Title: "fixture"})
	if st.Responses != 4 || st.Revisits != 1 || st.Pages != 3 {
		t.Fatalf("stats %+v, want 4 responses, 1 revisit, 3 pages", st)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte)
	var names []string
	for _, f := range zr.File {
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want stored (0)", f.Name, f.Method)
		}
		names = append(names, f.Name)
		files[f.Name] = readEntry(t, f)
	}
	want := []string{WARCPath, IndexPath, PagesPath, PackagePath, DigestPath}
	if !slices.Equal(names, want) {
		t.Fatalf("entries %v, want %v", names, want)
	}

	var pkg Package
	if err := json.Unmarshal(files[PackagePath], &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Profile != "data-package" || pkg.WACZVersion != "1.1.1" || pkg.Title != "fixture" || pkg.MainPageURL == "" {
		t.Errorf("datapackage %+v", pkg)
	}
	if len(pkg.Resources) != 3 {
		t.Fatalf("resources %+v, want the WARC, the index and the pages", pkg.Resources)
	}
	for _, r := range pkg.Resources {
		sum := sha256.Sum256(files[r.Path])
		if r.Hash != "sha256:"+hex.EncodeToString(sum[:]) || r.Bytes != int64(len(files[r.Path])) {
			t.Errorf("resource %s: hash %s bytes %d do not match the entry", r.Path, r.Hash, r.Bytes)
		}
		if r.Name != filepath.Base(r.Path) {
			t.Errorf("resource %s named %q", r.Path, r.Name)
		}
	}
	var dg Digest
	if err := json.Unmarshal(files[DigestPath], &dg); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(files[PackagePath])
	if dg.Path != PackagePath || dg.Hash != "sha256:"+hex.EncodeToString(sum[:]) || dg.SignedData != nil {
		t.Errorf("digest %+v", dg)
	}

	// Every index line points at the gzip member of its record.
	warc := files[WARCPath]
	lines := strings.Split(strings.TrimSpace(string(files[IndexPath])), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d index lines, want 5:\n%s", len(lines), files[IndexPath])
	}
	var prev string
	revisits := 0
	for _, l := range lines {
		parts := strings.SplitN(l, " ", 3)
		if len(parts) != 3 || len(parts[1]) != 14 {
			t.Fatalf("index line %q", l)
		}
		if key := parts[0] + " " + parts[1]; key < prev {
			t.Errorf("index not sorted at %q", l)
		} else {
			prev = key
		}
		var f map[string]string
		if err := json.Unmarshal([]byte(parts[2]), &f); err != nil {
			t.Fatal(err)
		}
		off, _ := strconv.Atoi(f["offset"])
		n, _ := strconv.Atoi(f["length"])
		if f["filename"] != "data.warc.gz" || off+n > len(warc) {
			t.Fatalf("line %q: bad location", l)
		}
		var got []*Member
		if err := Records(bytes.NewReader(warc[off:off+n]), func(m *Member) error {
			c := *m
			got = append(got, &c)
			return nil
		}); err != nil || len(got) != 1 {
			t.Fatalf("line %q: %d records at its location: %v", l, len(got), err)
		}
		m := got[0]
		if m.URL() != f["url"] || timestamp14(m.Time()) != parts[1] || "sha1:"+f["digest"] != m.Record.Header.Get("Warc-Payload-Digest") {
			t.Errorf("line %q does not describe record %s %s", l, m.URL(), m.Time())
		}
		// The peer that fetched a version; a revisit records a check,
		// whose checker the archive does not keep.
		if wantPeer := map[bool]string{false: "12D3KooWTestPeer", true: ""}[m.Type() == "revisit"]; f["peer"] != wantPeer {
			t.Errorf("line %q: peer %q, want %q", l, f["peer"], wantPeer)
		}
		if m.Type() == "revisit" {
			revisits++
			if f["mime"] != "warc/revisit" || f["url"] != siteHome {
				t.Errorf("revisit line %q", l)
			}
		}
	}
	if revisits != 1 {
		t.Errorf("%d revisit lines, want 1", revisits)
	}

	// pages.jsonl: header, then the HTML pages with titles.
	sc := bufio.NewScanner(bytes.NewReader(files[PagesPath]))
	var pages []map[string]string
	for sc.Scan() {
		var p map[string]string
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	if len(pages) != 4 || pages[0]["format"] != "json-pages-1.0" {
		t.Fatalf("pages %v", pages)
	}
	if pages[1]["url"] != siteHome || pages[1]["title"] != homeTitle || pages[1]["ts"] != "2026-03-01T10:00:00Z" {
		t.Errorf("first page %v", pages[1])
	}
}

func TestWACZSigned(t *testing.T) {
	sg := newSigner()
	data, _ := buildWACZ(t, WACZOptions{Signer: sg})
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var dg Digest
	for _, f := range zr.File {
		if f.Name == DigestPath {
			if err := json.Unmarshal(readEntry(t, f), &dg); err != nil {
				t.Fatal(err)
			}
		}
	}
	sd := dg.SignedData
	if sd == nil || sd.Hash != dg.Hash || sd.Peer != sg.Peer() || sd.Software != "herod" {
		t.Fatalf("signed data %+v of digest %+v", sd, dg)
	}
	sig, err := base64.StdEncoding.DecodeString(sd.Signature)
	if err != nil || !ed25519.Verify(sg.priv.Public().(ed25519.PublicKey), []byte(dg.Hash), sig) {
		t.Fatalf("signature does not verify: %v", err)
	}
}

// TestWACZWarcio checks the packaged WARC, warcinfo record and revisit
// included, with warcio.js, and that warcio's own index of it locates the
// same records.
func TestWACZWarcio(t *testing.T) {
	tool := warciotest.Setup(t)
	data, _ := buildWACZ(t, WACZOptions{Info: &testInfo})
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var ours []byte
	for _, f := range zr.File {
		switch f.Name {
		case WARCPath:
			if err := os.WriteFile(filepath.Join(dir, "data.warc.gz"), readEntry(t, f), 0o644); err != nil {
				t.Fatal(err)
			}
		case IndexPath:
			ours = readEntry(t, f)
		}
	}
	sum := tool.Validate(t, filepath.Join(dir, "data.warc.gz"))
	if len(sum.Errors) > 0 || sum.Responses != 4 || sum.Revisits != 1 || sum.Records != 6 {
		t.Fatalf("warcio: %+v", sum)
	}
	theirs := tool.CDXIndex(t, dir, "data.warc.gz")
	if got, want := locations(t, ours), locations(t, theirs); !slices.Equal(got, want) {
		t.Errorf("index locations differ from warcio's:\nours   %v\nwarcio %v", got, want)
	}
}

// locations lists "surt ts offset length" of each CDXJ line, sorted.
func locations(t testing.TB, cdxj []byte) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(cdxj)), "\n") {
		parts := strings.SplitN(l, " ", 3)
		var f map[string]any
		if len(parts) != 3 || json.Unmarshal([]byte(parts[2]), &f) != nil {
			t.Fatalf("cdxj line %q", l)
		}
		out = append(out, strings.Join([]string{parts[0], parts[1], toString(f["offset"]), toString(f["length"])}, " "))
	}
	slices.Sort(out)
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

func TestRecordsRejectsTruncated(t *testing.T) {
	warc := exportWARC(t, fixtureStore(t))
	n := 0
	err := Records(bytes.NewReader(warc[:len(warc)-10]), func(*Member) error { n++; return nil })
	if err == nil || n != 4 {
		t.Fatalf("truncated stream: %d records, err %v; want 4 and an error", n, err)
	}
}
