package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

const testSource = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func importedCapture(url string, at time.Time, body string) Capture {
	c := capture(url, at, body)
	c.Imported = &Import{From: testSource, Record: "<urn:uuid:00000000-0000-4000-8000-000000000001>"}
	return c
}

// TestAddImported: an importer's record is stored by the owner as an
// imported version, whose mark survives a reopen and a replica's copy;
// the same record again, or one of the same URL, date and payload,
// stores nothing.
func TestAddImported(t *testing.T) {
	ctx := context.Background()
	old := time.Date(2009, 3, 4, 5, 6, 7, 0, time.UTC)
	importer := openTest(t, Options{NoSync: true, Signer: newEdSigner(1)})
	dir := t.TempDir()
	owner, err := Open(dir, Options{NoSync: true, Signer: newEdSigner(2), Verifier: edVerifier{}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := importer.EncodeImported(importedCapture("http://a.example/p", old, "<p>1999</p>"))
	if err != nil {
		t.Fatal(err)
	}
	v, added, err := owner.AddImported(ctx, data, newEdSigner(1).Peer(), nil)
	if err != nil || !added {
		t.Fatalf("add: %v, added %v", err, added)
	}
	if v.Imported == nil || v.Imported.From != testSource || !v.Time.Equal(old) || v.Peer != newEdSigner(1).Peer() {
		t.Fatalf("version %+v", v)
	}
	before := owner.Stats()
	for range 2 {
		again, err := owner.EncodeImported(importedCapture("http://a.example/p", old, "<p>1999</p>"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range [][]byte{data, again} {
			_, added, err := owner.AddImported(ctx, d, "", nil)
			if err != nil || added {
				t.Fatalf("again: %v, added %v", err, added)
			}
		}
	}
	if after := owner.Stats(); after.Bytes != before.Bytes || after.Versions != 1 {
		t.Fatalf("held record cost bytes: %d -> %d, %d versions", before.Bytes, after.Bytes, after.Versions)
	}
	owner.Close()
	owner, err = Open(dir, Options{NoSync: true, Signer: newEdSigner(2), Verifier: edVerifier{}})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	vs, err := owner.Versions(ctx, "http://a.example/p")
	if err != nil || len(vs) != 1 || vs[0].Imported == nil || vs[0].Imported.Record != "<urn:uuid:00000000-0000-4000-8000-000000000001>" {
		t.Fatalf("after reopen: %+v, %v", vs, err)
	}
	_, c, err := owner.Get(ctx, "http://a.example/p", old)
	if err != nil || string(c.Body) != "<p>1999</p>" || c.Imported == nil {
		t.Fatalf("get: %v %+v", err, c)
	}
	// A replica's copy keeps the mark.
	file, err := owner.ReadFile(ctx, vs[0].Entry())
	if err != nil {
		t.Fatal(err)
	}
	replica := openTest(t, Options{NoSync: true, Signer: newEdSigner(3), Verifier: edVerifier{}})
	rv, _, err := replica.Import(ctx, vs[0].Entry().Name(), file)
	if err != nil || rv.Imported == nil || rv.Imported.From != testSource {
		t.Fatalf("replica: %v %+v", err, rv)
	}
}

// TestAddImportedRefuses: a crawl cannot come in as an import, nor an
// import signed by another node than the sender, nor one admit refuses.
func TestAddImportedRefuses(t *testing.T) {
	ctx := context.Background()
	crawler := openTest(t, Options{NoSync: true, Signer: newEdSigner(1)})
	owner := openTest(t, Options{NoSync: true, Signer: newEdSigner(2), Verifier: edVerifier{}})
	v, _ := mustPut(t, crawler, capture("http://a.example/c", t0, "crawled"))
	crawl, err := crawler.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := owner.AddImported(ctx, crawl, "", nil); !errors.Is(err, ErrNotImported) {
		t.Fatalf("crawl as import: %v", err)
	}
	imp, err := crawler.EncodeImported(importedCapture("http://a.example/i", t0, "imported"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := owner.AddImported(ctx, imp, newEdSigner(9).Peer(), nil); !errors.Is(err, ErrUnsigned) {
		t.Fatalf("sent by another: %v", err)
	}
	no := errors.New("not mine")
	if _, _, err := owner.AddImported(ctx, imp, "", func(Version) error { return no }); !errors.Is(err, no) {
		t.Fatalf("admit: %v", err)
	}
	bad := importedCapture("http://a.example/i", t0, "x")
	bad.Imported.From = "md5:abc"
	if _, err := crawler.EncodeImported(bad); !errors.Is(err, ErrBadImport) {
		t.Fatalf("bad source: %v", err)
	}
	if owner.Stats().Versions != 0 {
		t.Fatal("a refused record was stored")
	}
}

// TestDateImport: an imported version is dated by its import, shown as
// imported, never as fetched or witnessed; the same old capture as a
// crawl is not shown.
func TestDateImport(t *testing.T) {
	old := time.Date(2009, 3, 4, 5, 6, 7, 0, time.UTC)
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	importer, witness := newEdSigner(1), newEdSigner(2)
	v := Version{URL: "http://a.example/p", Time: old, Peer: importer.Peer(),
		Imported: &Import{From: testSource, At: at}}
	seen := at.Add(time.Minute)
	sig, _ := witness.Sign(WitnessMessage(v.URL, v.Time, v.Digest, seen))
	ws := []Witness{{Peer: witness.Peer(), Seen: seen, Sig: sig}}
	rule := WitnessRule{Verifier: edVerifier{}}
	for _, tc := range []struct {
		name string
		v    Version
		ws   []Witness
		now  time.Time
		want Dating
	}{
		{"recent import", v, nil, at.Add(time.Hour), Imported},
		{"old import, unwitnessed", v, nil, at.Add(72 * time.Hour), Unwitnessed},
		{"old import, witnessed", v, ws, at.Add(72 * time.Hour), Imported},
		{"same capture as a crawl", Version{URL: v.URL, Time: old, Peer: importer.Peer()}, ws, at.Add(time.Hour), Unwitnessed},
	} {
		if got, _ := rule.Date(tc.v, tc.ws, tc.now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	self := WitnessRule{Self: importer.Peer(), Verifier: edVerifier{}}
	if got, _ := self.Date(v, nil, at.Add(1000*time.Hour)); got != Imported || !strings.Contains(got.String(), "imported") {
		t.Errorf("own import: %v", got)
	}
}

// TestImportMarkSigned: the import fields are covered by the importer's
// signature: a holder cannot strip them from an import, add them to a
// crawl, or list a crawl as an import.
func TestImportMarkSigned(t *testing.T) {
	ctx := context.Background()
	signer := newEdSigner(1)
	src := openTest(t, Options{NoSync: true, Signer: signer})
	check := openTest(t, Options{NoSync: true, Signer: newEdSigner(2), Verifier: edVerifier{}})
	imp, err := src.EncodeImported(importedCapture("http://a.example/i", t0, "imported"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := check.VerifyRecord(imp); err != nil {
		t.Fatalf("intact import: %v", err)
	}
	v, _ := mustPut(t, src, capture("http://a.example/c", t0, "crawled"))
	crawl, err := src.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(data []byte, edit func(string) string) []byte {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := io.ReadAll(zr)
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(edit(string(plain))))
		zw.Close()
		return b.Bytes()
	}
	stripped := rewrite(imp, func(s string) string {
		var keep []string
		for _, l := range strings.SplitAfter(s, "\r\n") {
			if !strings.HasPrefix(l, "WARC-Herod-Imported-") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "")
	})
	added := rewrite(crawl, func(s string) string {
		return strings.Replace(s, "WARC-Type: response\r\n", "WARC-Type: response\r\n"+HeaderImportedFrom+": "+testSource+"\r\n"+
			HeaderImportedAt+": "+formatWarcDate(t0.Add(time.Hour))+"\r\n", 1)
	})
	for name, data := range map[string][]byte{"import stripped": stripped, "crawl marked imported": added} {
		if _, _, err := check.VerifyRecord(data); !errors.Is(err, ErrUnsigned) {
			t.Errorf("%s: %v, want ErrUnsigned", name, err)
		}
	}
	_, sig, err := src.Provenance(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	v.Imported = &Import{From: testSource, At: t0}
	if err := check.VerifySigned(v, sig); !errors.Is(err, ErrUnsigned) {
		t.Errorf("crawl listed as imported: %v", err)
	}
}
