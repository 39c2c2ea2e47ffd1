package exchange

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/warciotest"
)

// TestOutlinks: a WARC export with Outlinks carries, right after each
// HTML response, a metadata record naming it (WARC-Concurrent-To) whose
// outlinks are the links export's for that version; every other record
// goes through verbatim; the metadata record is the same on a second
// export; progress comes after a response and its metadata.
func TestOutlinks(t *testing.T) {
	ctx := context.Background()
	warc := exportWARC(t, fixtureStore(t))
	src := func(ctx context.Context, w io.Writer) error { _, err := w.Write(warc); return err }
	var links bytes.Buffer
	if _, err := Links(bytes.NewReader(warc), &links, nil); err != nil {
		t.Fatal(err)
	}
	wantLinks := map[string][]string{} // "url date" -> targets, from the links export
	for _, l := range strings.Split(strings.TrimSpace(links.String()), "\n") {
		f := strings.Split(l, "\t")
		wantLinks[f[0]+" "+f[2]] = append(wantLinks[f[0]+" "+f[2]], f[1])
	}
	run := func() ([]byte, []string, ExportStats) {
		var got bytes.Buffer
		var cursors []string
		st, err := Export(ctx, src, &got, ExportOptions{Outlinks: true, Info: &WARCInfo{Software: "herod test"}, Progress: func(c string) { cursors = append(cursors, c) }})
		if err != nil {
			t.Fatal(err)
		}
		return got.Bytes(), cursors, st
	}
	out, cursors, st := run()
	var plain [][]byte
	var prev *archive.Record
	meta := 0
	err := Records(bytes.NewReader(out), func(m *Member) error {
		rec := *m.Record
		switch m.Type() {
		case "warcinfo":
		case "metadata":
			meta++
			if prev == nil || prev.Header.Get("Warc-Type") != "response" || m.Record.Header.Get("Warc-Concurrent-To") != prev.Header.Get("Warc-Record-Id") ||
				m.URL() != prev.Header.Get("Warc-Target-Uri") || m.Record.Header.Get("Warc-Date") != prev.Header.Get("Warc-Date") {
				t.Errorf("metadata record of %s does not follow its response", m.URL())
			}
			k := m.URL() + " " + m.Time().Format("2006-01-02")
			if got := OutlinksOf(m.Record.Block); !slices.Equal(got, wantLinks[k]) {
				t.Errorf("outlinks of %s: %q, want %q", k, got, wantLinks[k])
			}
		default:
			plain = append(plain, slices.Clone(m.Raw))
		}
		prev = &rec
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if meta == 0 || meta != st.Outlinks.Metadata || st.InfoBytes == 0 {
		t.Fatalf("%d metadata records, stats %+v", meta, st)
	}
	if !bytes.Equal(bytes.Join(plain, nil), warc) {
		t.Error("the records besides warcinfo and metadata are not the stream's, verbatim")
	}
	var want []string
	if err := Records(bytes.NewReader(warc), func(m *Member) error { want = append(want, m.Cursor()); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cursors, want) {
		t.Errorf("progress %q, want each record's cursor", cursors)
	}
	again, _, st2 := run()
	if !bytes.Equal(out[st.InfoBytes:], again[st2.InfoBytes:]) {
		t.Error("a second export's records differ from the first's")
	}
}

// TestOutlinksWarcio: warcio.js reads a WARC with outlink metadata
// records and finds every record's digests right.
func TestOutlinksWarcio(t *testing.T) {
	tool := warciotest.Setup(t)
	warc := exportWARC(t, fixtureStore(t))
	src := func(ctx context.Context, w io.Writer) error { _, err := w.Write(warc); return err }
	var got bytes.Buffer
	st, err := Export(context.Background(), src, &got, ExportOptions{Outlinks: true, Info: &testInfo})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out.warc.gz")
	if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := tool.Validate(t, path)
	if len(sum.Errors) > 0 || sum.Records != st.Outlinks.Records+st.Outlinks.Metadata+1 {
		t.Fatalf("warcio: %+v, want %d records", sum, st.Outlinks.Records+st.Outlinks.Metadata+1)
	}
}
