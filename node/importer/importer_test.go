package importer

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// edSigner signs with an Ed25519 key named by its hex public key.
type edSigner struct{ key ed25519.PrivateKey }

func (s edSigner) Peer() string                    { return hex.EncodeToString(s.key.Public().(ed25519.PublicKey)) }
func (s edSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

type edVerifier struct{}

func (edVerifier) Verify(peer string, msg, sig []byte) error {
	pub, err := hex.DecodeString(peer)
	if err != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, msg, sig) {
		return errors.New("bad signature")
	}
	return nil
}

// flaky fails AddImported after ok calls: a node killed mid-import.
type flaky struct {
	*archive.Store
	ok int
}

var errKilled = errors.New("killed")

func (f *flaky) AddImported(ctx context.Context, data []byte, sender string, admit func(archive.Version) error) (archive.Version, bool, error) {
	if f.ok <= 0 {
		return archive.Version{}, false, errKilled
	}
	f.ok--
	return f.Store.AddImported(ctx, data, sender, admit)
}

// local returns an importer whose every record is this node's own, into
// a fresh store, with the store.
func local(t *testing.T, wrap func(*archive.Store) Store) (*Importer, *archive.Store) {
	t.Helper()
	st, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, Verifier: edVerifier{},
		Signer: edSigner{ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var s Store = st
	if wrap != nil {
		s = wrap(st)
	}
	return New(Config{
		Store: s,
		Route: func(context.Context, id.ID) (Owner, error) { return Owner{Self: true, Peer: "self"}, nil },
		Admit: Admit(func(id.ID) bool { return true }, time.Now),
		Dir:   t.TempDir(),
	}), st
}

// warcRecord renders one WARC/1.0 record with sha1 digests, as another
// writer would.
func warcRecord(typ, uri, date, block string, payloadOff int) []byte {
	d := func(b string) string {
		s := sha1.Sum([]byte(b))
		return "sha1:" + base32.StdEncoding.EncodeToString(s[:])
	}
	ct := "application/http; msgtype=response"
	if typ == "resource" {
		ct = "text/plain"
	}
	return fmt.Appendf(nil, "WARC/1.0\r\nWARC-Type: %s\r\nWARC-Record-ID: <urn:uuid:%s>\r\nWARC-Date: %s\r\nWARC-Target-URI: %s\r\n"+
		"Content-Type: %s\r\nWARC-Block-Digest: %s\r\nWARC-Payload-Digest: %s\r\nContent-Length: %d\r\n\r\n%s\r\n\r\n",
		typ, fmt.Sprintf("%08x-0000-4000-8000-000000000000", len(uri)+len(block)), date, uri, ct, d(block), d(block[payloadOff:]), len(block), block)
}

func response(body string) (string, int) {
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n", len(body))
	return head + body, len(head)
}

// sampleRecords returns n response records of distinct URLs, every
// third one with a payload of 10 KB (larger than a reader's buffer).
func sampleRecords(n int) [][]byte {
	var out [][]byte
	for i := range n {
		b, off := response(fmt.Sprintf("<p>page %d</p>", i) + strings.Repeat("y", (i%3/2)*10000))
		out = append(out, warcRecord("response", fmt.Sprintf("http://w.example/p%d", i), "2014-02-03T04:05:06Z", b, off))
	}
	return out
}

// zstdEach compresses each record as one zstd frame, with dict (a raw
// content dictionary, in a skippable frame first, per the WARC zstd
// convention) when not nil.
func zstdEach(t *testing.T, recs [][]byte, dict []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	opts := []zstd.EOption{zstd.WithEncoderConcurrency(1)}
	if dict != nil {
		b.Write([]byte{0x5d, 0x2a, 0x4d, 0x18})
		b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(dict))))
		b.Write(dict)
		opts = append(opts, zstd.WithEncoderDictRaw(0, dict))
	}
	enc, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		b.Write(enc.EncodeAll(r, nil))
	}
	return b.Bytes()
}

func gzipEach(recs [][]byte) []byte {
	var b bytes.Buffer
	for _, r := range recs {
		zw := gzip.NewWriter(&b)
		zw.Write(r)
		zw.Close()
	}
	return b.Bytes()
}

func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	writeFile(t, p, data)
	return p
}

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestImportFormats(t *testing.T) {
	recs := sampleRecords(3)
	plain := bytes.Join(recs, nil)
	var whole bytes.Buffer
	zw := gzip.NewWriter(&whole)
	zw.Write(plain)
	zw.Close()
	arc, err := os.ReadFile("testdata/sample.arc")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		data  []byte
		added int
		skip  int
	}{
		{"plain.warc", plain, 3, 0},
		{"members.warc.gz", gzipEach(recs), 3, 0},
		{"whole.warc.gz", whole.Bytes(), 3, 0},
		{"frames.warc.zst", zstdEach(t, recs, nil), 3, 0},
		{"dict.warc.zst", zstdEach(t, recs, bytes.Repeat([]byte("WARC/1.0\r\nWARC-Type: response\r\n<p>page "), 20)), 3, 0},
		{"sample.arc", arc, 2, 2},
		{"sample.arc.gz", gzipEach(bytes.SplitAfter(arc, []byte("</p>\n"))), 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, st := local(t, nil)
			var bad []RecordError
			rep, err := im.File(context.Background(), write(t, tc.name, tc.data), tc.name, func(re RecordError) { bad = append(bad, re) })
			if err != nil || rep.Added != tc.added || rep.Skipped != tc.skip || len(bad) != 0 {
				t.Fatalf("%+v, %v, bad %+v", rep, err, bad)
			}
			if n := st.Stats().Versions; n != int64(tc.added) {
				t.Fatalf("%d versions stored", n)
			}
		})
	}
	// The ARC's capture keeps its 2005 date and says where it came from.
	im, st := local(t, nil)
	if _, err := im.File(context.Background(), "testdata/sample.arc", "sample.arc", nil); err != nil {
		t.Fatal(err)
	}
	vs, err := st.Versions(context.Background(), "http://arc.example/")
	if err != nil || len(vs) != 1 || vs[0].Time != time.Date(2005, 6, 14, 7, 1, 59, 0, time.UTC) ||
		vs[0].Imported == nil || !strings.HasPrefix(vs[0].Imported.Record, "arc:") {
		t.Fatalf("%+v %v", vs, err)
	}
}

// TestImportDamaged: a record whose payload does not match its digest,
// and a gzip member that does not decompress, are each named; the other
// records are imported.
func TestImportDamaged(t *testing.T) {
	recs := sampleRecords(4)
	flipped := bytes.Replace(recs[1], []byte("page 1"), []byte("page X"), 1)
	plain := bytes.Join([][]byte{recs[0], flipped, recs[2], recs[3]}, nil)
	members := gzipEach(recs)
	// Corrupt the deflate data of the second member.
	second := len(gzipEach(recs[:1]))
	members[second+30] ^= 0xff
	members[second+31] ^= 0xff
	truncated := bytes.Join([][]byte{recs[0], recs[1][:len(recs[1])-40], recs[2], recs[3]}, nil)
	for _, tc := range []struct {
		name, where string
		data        []byte
	}{
		{"digest.warc", fmt.Sprintf("offset %d", len(recs[0])), plain},
		{"member.warc.gz", fmt.Sprintf("offset %d", second), members},
		{"truncated.warc", fmt.Sprintf("offset %d", len(recs[0])), truncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, st := local(t, nil)
			var bad []RecordError
			rep, err := im.File(context.Background(), write(t, tc.name, tc.data), tc.name, func(re RecordError) { bad = append(bad, re) })
			if err != nil || rep.Added != 3 || rep.Damaged != 1 || len(bad) != 1 || bad[0].Where != tc.where {
				t.Fatalf("%+v, %v, bad %+v", rep, err, bad)
			}
			t.Logf("named: %+v", bad[0])
			if n := st.Stats().Versions; n != 3 {
				t.Fatalf("%d versions", n)
			}
		})
	}
}

// TestImportResumes: an import that stops mid-file resumes after the
// last settled batch, and the records sent twice are stored once.
func TestImportResumes(t *testing.T) {
	recs := sampleRecords(batchRecords*2 + 10)
	p := write(t, "big.warc.gz", gzipEach(recs))
	var fl *flaky
	im, st := local(t, func(s *archive.Store) Store { fl = &flaky{Store: s, ok: batchRecords + 20}; return fl })
	ctx := context.Background()
	if _, err := im.File(ctx, p, "big", nil); !errors.Is(err, errKilled) {
		t.Fatalf("first run: %v", err)
	}
	if n := st.Stats().Versions; n != batchRecords+20 {
		t.Fatalf("%d versions after the first run", n)
	}
	bytesBefore := st.Stats().Bytes
	fl.ok = len(recs)
	rep, err := im.File(ctx, p, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resumed != batchRecords || rep.Held != 20 || rep.Added != len(recs)-batchRecords-20 {
		t.Fatalf("second run: %+v", rep)
	}
	if s := st.Stats(); s.Versions != int64(len(recs)) || s.Bytes <= bytesBefore {
		t.Fatalf("%+v", s)
	}
	// A third run of the finished file sends nothing.
	rep, err = im.File(ctx, p, "big", nil)
	if err != nil || rep.Resumed != len(recs) || rep.Added+rep.Held != 0 {
		t.Fatalf("third run: %+v %v", rep, err)
	}
}

// FuzzSource: no input makes the reader panic or loop; every record it
// yields or names is accounted for.
func FuzzSource(f *testing.F) {
	recs := sampleRecords(2)
	f.Add(bytes.Join(recs, nil))
	f.Add(gzipEach(recs))
	if arc, err := os.ReadFile("testdata/sample.arc"); err == nil {
		f.Add(arc)
	}
	f.Add([]byte("WARC/1.0\r\nContent-Length: 99999999999\r\n\r\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cv := &converter{source: "sha256:" + strings.Repeat("0", 64)}
		n := 0
		_ = eachFile(p, func(it item) error {
			n++
			if n > len(data)+1 {
				t.Fatalf("more records (%d) than bytes (%d)", n, len(data))
			}
			cv.convert(it)
			return nil
		})
	})
}
