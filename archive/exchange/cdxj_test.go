package exchange

import (
	"bytes"
	"context"
	"testing"

	"github.com/herod-archive/herod/archive"
)

// TestIndex: the index built from an export stream, record by record, is
// byte for byte the CDXJ the store writes with the same export.
func TestIndex(t *testing.T) {
	s := fixtureStore(t)
	var warc, want bytes.Buffer
	if _, err := s.Export(context.Background(), archive.ExportOptions{Revisits: true, Filename: "x.warc.gz"}, &warc, &want); err != nil {
		t.Fatal(err)
	}
	x := &Index{Filename: "x.warc.gz"}
	if err := Records(bytes.NewReader(warc.Bytes()), func(m *Member) error { return x.Add(m, m.Offset) }); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := x.WriteTo(&got); err != nil || x.Len() < 5 || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("index of %d lines, %v:\n%s\nwant:\n%s", x.Len(), err, got.Bytes(), want.Bytes())
	}
}
