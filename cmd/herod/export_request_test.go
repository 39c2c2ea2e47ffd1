package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/exchange"
)

// TestCopyRecordsRequests: a stream whose responses follow their request
// records, cut at any byte, is copied up to the last response that came
// whole, its request record with it, and what follows the cursor in the
// whole stream completes it exactly, with and without outlinks.
func TestCopyRecordsRequests(t *testing.T) {
	ctx := t.Context()
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, body := range []string{`<a href="/b">b</a>`, `no links`, `<a href="/c">c</a>`} {
		u := "/" + string(rune('a'+i))
		c := archive.Capture{URL: "http://o.example" + u, Time: t0, Status: 200,
			Header: map[string][]string{"Content-Type": {"text/html"}}, Body: []byte(body)}
		if i != 1 {
			c.Request = []byte("GET " + u + " HTTP/1.1\r\nHost: o.example\r\n\r\n")
		}
		if _, _, err := s.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	export := exportAfter(t, s)
	for _, outlinks := range []bool{false, true} {
		whole := export("", outlinks)
		var all bytes.Buffer
		var offsets []int64
		index := func(m *exchange.Member, off int64) error { offsets = append(offsets, off); return nil }
		if outlinks {
			index = nil
		}
		n, _, err := copyRecords(&all, bytes.NewReader(whole), outlinks, func() bool { return true }, index, func(string) {})
		if err != nil || n != 3 || !bytes.Equal(all.Bytes(), whole) {
			t.Fatalf("outlinks %v: whole stream: %d records, %v", outlinks, n, err)
		}
		for _, off := range offsets { // the index points at the responses
			rd := bytes.NewReader(whole[off:])
			if err := exchange.Records(rd, func(m *exchange.Member) error {
				if m.Type() != "response" {
					t.Fatalf("index offset %d holds a %s record", off, m.Type())
				}
				return io.EOF
			}); err != io.EOF {
				t.Fatalf("index offset %d: %v", off, err)
			}
		}
		checkEveryCut(t, whole, outlinks, export)
	}
}

// exportAfter returns what a resumed export of every record of s after
// a cursor sends ("": the whole), with outlinks' metadata records or
// without. It depends on the cursor and the form alone, so each is made
// once.
func exportAfter(t *testing.T, s *archive.Store) func(after string, outlinks bool) []byte {
	type key struct {
		after    string
		outlinks bool
	}
	made := map[key][]byte{}
	return func(after string, outlinks bool) []byte {
		if b, ok := made[key{after, outlinks}]; ok {
			return b
		}
		var b bytes.Buffer
		if _, err := exchange.Export(t.Context(), func(ctx context.Context, w io.Writer) error {
			_, err := s.Export(ctx, archive.ExportOptions{Query: archive.Query{All: true}, After: after}, w, nil)
			return err
		}, &b, exchange.ExportOptions{Outlinks: outlinks}); err != nil {
			t.Fatal(err)
		}
		made[key{after, outlinks}] = b.Bytes()
		return b.Bytes()
	}
}

// checkEveryCut cuts the stream whole at every byte, copies the part
// (copyRecords) and checks that what the copy kept followed by the
// export resumed at its cursor is the whole again.
func checkEveryCut(t *testing.T, whole []byte, outlinks bool, export func(after string, outlinks bool) []byte) {
	t.Helper()
	for cut := range len(whole) {
		var got bytes.Buffer
		_, cursor, _ := copyRecords(&got, bytes.NewReader(whole[:cut]), outlinks, func() bool { return false }, nil, func(string) {})
		if !bytes.Equal(append(got.Bytes(), export(cursor, outlinks)...), whole) {
			t.Fatalf("outlinks %v: cut at byte %d of %d: %d bytes kept, cursor %q: kept and resumed differ from the whole", outlinks, cut, len(whole), got.Len(), cursor)
		}
	}
}
