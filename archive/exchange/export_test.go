package exchange

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// TestExport: every format of the one export path gives what its
// converter gives on the same stream; the WARC goes through unchanged
// behind its warcinfo record, and without one when Info is nil.
func TestExport(t *testing.T) {
	ctx := context.Background()
	warc := exportWARC(t, fixtureStore(t))
	src := func(ctx context.Context, w io.Writer) error {
		_, err := w.Write(warc)
		return err
	}
	var links, texts bytes.Buffer
	if _, err := Links(bytes.NewReader(warc), &links, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Texts(bytes.NewReader(warc), &texts, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format string
		want   []byte
	}{{FormatLinks, links.Bytes()}, {FormatText, texts.Bytes()}, {"", warc}} {
		var got bytes.Buffer
		var cursors []string
		st, err := Export(ctx, src, &got, ExportOptions{Format: tc.format, Progress: func(c string) { cursors = append(cursors, c) }})
		if err != nil || !bytes.Equal(got.Bytes(), tc.want) {
			t.Errorf("format %q: %d bytes, %v; want %d bytes", tc.format, got.Len(), err, len(tc.want))
		}
		if tc.format != "" && (st.Bulk.Versions == 0 || len(cursors) != st.Bulk.Versions) {
			t.Errorf("format %q: %+v with %d cursors", tc.format, st.Bulk, len(cursors))
		}
	}

	var got bytes.Buffer
	st, err := Export(ctx, src, &got, ExportOptions{Info: &WARCInfo{Software: "herod test"}})
	if err != nil || st.InfoBytes == 0 || !bytes.Equal(got.Bytes()[st.InfoBytes:], warc) {
		t.Fatalf("WARC with warcinfo: %d bytes, info %d, %v", got.Len(), st.InfoBytes, err)
	}
	var types []string
	if err := Records(bytes.NewReader(got.Bytes()), func(m *Member) error { types = append(types, m.Type()); return nil }); err != nil || types[0] != "warcinfo" {
		t.Fatalf("records %v, %v: want warcinfo first", types, err)
	}

	got.Reset()
	st, err = Export(ctx, src, &got, ExportOptions{Format: FormatWACZ})
	if err != nil || st.WACZ.Responses == 0 || got.Len() == 0 {
		t.Fatalf("WACZ: %+v, %d bytes, %v", st.WACZ, got.Len(), err)
	}
	if _, err := Export(ctx, src, io.Discard, ExportOptions{Format: "pdf"}); !errors.Is(err, ErrFormatName) {
		t.Fatalf("format pdf: %v, want ErrFormatName", err)
	}
}

// TestExportEmptyAndFailing: a source that writes nothing writes no
// warcinfo and, with SkipEmptyWACZ, no package; a source's error comes
// back from every format; a converter that fails stops the source.
func TestExportEmptyAndFailing(t *testing.T) {
	ctx := context.Background()
	none := func(ctx context.Context, w io.Writer) error { return nil }
	var got bytes.Buffer
	for _, o := range []ExportOptions{{Info: &WARCInfo{Software: "herod test"}}, {Format: FormatWACZ, SkipEmptyWACZ: true}} {
		if _, err := Export(ctx, none, &got, o); err != nil || got.Len() != 0 {
			t.Fatalf("%+v of nothing: %d bytes, %v", o, got.Len(), err)
		}
	}
	if _, err := Export(ctx, none, &got, ExportOptions{Format: FormatWACZ}); err != nil || got.Len() == 0 {
		t.Fatalf("empty WACZ: %d bytes, %v; want a whole package", got.Len(), err)
	}
	boom := errors.New("member unreachable")
	failing := func(ctx context.Context, w io.Writer) error { return boom }
	for _, f := range []string{FormatWARC, FormatWACZ, FormatLinks, FormatText} {
		if _, err := Export(ctx, failing, io.Discard, ExportOptions{Format: f}); !errors.Is(err, boom) {
			t.Errorf("format %s: %v, want the source's error", f, err)
		}
	}
	stopped := make(chan error, 1)
	endless := func(ctx context.Context, w io.Writer) error {
		for {
			if _, err := w.Write([]byte("not a gzip member")); err != nil {
				stopped <- err
				return err
			}
		}
	}
	if _, err := Export(ctx, endless, io.Discard, ExportOptions{Format: FormatLinks}); !errors.Is(err, ErrFormat) {
		t.Fatalf("malformed stream: %v, want ErrFormat", err)
	}
	if err := <-stopped; !errors.Is(err, errConverterDone) {
		t.Fatalf("source stopped with %v, want errConverterDone", err)
	}
}
