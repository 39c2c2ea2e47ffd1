package export

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/internal/archivetest"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
)

var q0 = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

// testNode is a member with only a store.
type testNode struct{ store *archive.Store }

// queryRequest is the part of the node's query request an export reads.
type queryRequest struct {
	Op       string
	Query    archive.Query
	After    string
	Revisits bool
}

// serveExport answers an export request as a member does.
func (n *testNode) serveExport(ctx context.Context, req queryRequest, w io.Writer) error {
	return Serve(ctx, n.store, archive.ExportOptions{Query: req.Query, Revisits: req.Revisits, After: req.After}, w)
}

// storeNode returns a member whose store holds, for each URL, versions on
// days 0 and 1.
func storeNode(t testing.TB, urls ...string) *testNode {
	t.Helper()
	s := archivetest.TwoDays(t, q0, urls...)
	return &testNode{store: s}
}

// reply returns n's export reply frames for a host query.
func reply(t testing.TB, n *testNode, host, after string) []byte {
	t.Helper()
	var b bytes.Buffer
	req := queryRequest{Op: "export", Query: archive.Query{Host: host}, After: after}
	if err := n.serveExport(context.Background(), req, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// member reads a reply as Member does, positioned on its first record.
func member(data []byte, host string) (*Member, error) {
	m := &Member{name: "test", r: bufio.NewReader(bytes.NewReader(data)), q: cdx.Query{URL: host, Match: cdx.MatchHost}}
	return m, m.next()
}

// TestMergeExports merges two members' replies that share one URL (as
// replicas would) and checks that the result is byte for byte the export
// of one store holding the union.
func TestMergeExports(t *testing.T) {
	a := storeNode(t, "http://h.example/1", "http://h.example/3", "http://other.example/")
	b := storeNode(t, "http://h.example/2", "http://h.example/3")
	union := storeNode(t, "http://h.example/1", "http://h.example/2", "http://h.example/3")
	var want bytes.Buffer
	if _, err := union.store.Export(context.Background(), archive.ExportOptions{Query: archive.Query{Host: "h.example"}}, &want, nil); err != nil {
		t.Fatal(err)
	}
	empty := storeNode(t, "http://other.example/")
	var ms []*Member
	for _, n := range []*testNode{a, empty, b} {
		m, err := member(reply(t, n, "h.example", ""), "h.example")
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var got bytes.Buffer
	var cursors []string
	if err := Merge(ms, &got, func(c string) { cursors = append(cursors, c) }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) || len(cursors) != 6 {
		t.Fatalf("merged %d bytes with %d cursors, want the union's %d bytes and 6", got.Len(), len(cursors), want.Len())
	}
	if !slices.IsSortedFunc(cursors, func(x, y string) int {
		kx, _ := archive.ParseCursor(x)
		ky, _ := archive.ParseCursor(y)
		return kx.Compare(ky)
	}) {
		t.Fatalf("cursors out of order: %q", cursors)
	}
}

// TestMergeReportsSkipped checks that a member's corrupt files, which its
// store leaves out of the export, make the merge end with a partial error
// after writing everything else.
func TestMergeReportsSkipped(t *testing.T) {
	a := storeNode(t, "http://h.example/1")
	b := storeNode(t, "http://h.example/2")
	var victim archive.Version
	b.store.Scan(context.Background(), archive.Query{}, func(v archive.Version) error {
		victim = v
		return nil
	})
	f, err := os.OpenFile(filepath.Join(b.store.Dir(), victim.File), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("garbage"), victim.Offset); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var ms []*Member
	for _, n := range []*testNode{a, b} {
		m, err := member(reply(t, n, "h.example", ""), "h.example")
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var got bytes.Buffer
	n := 0
	err = Merge(ms, &got, func(string) { n++ })
	if !errors.Is(err, ErrPartial) || !strings.Contains(err.Error(), "1 corrupt") || n != 3 {
		t.Fatalf("merge with a corrupt file: %d records, %v; want 3 and a partial error", n, err)
	}
}

// TestMemberExportChecks feeds Member replies that break the
// protocol in one way each; every one must be refused.
func TestMemberExportChecks(t *testing.T) {
	n := storeNode(t, "http://h.example/1", "http://h.example/2")
	good := reply(t, n, "h.example", "")
	r := bufio.NewReader(bytes.NewReader(good))
	var heads []recordHeader
	var bodies [][]byte
	for {
		var h recordHeader
		if err := wire.ReadJSON(r, maxHeaderFrame, &h); err != nil {
			t.Fatal(err)
		}
		if h.End {
			break
		}
		b, err := wire.ReadFrame(r, MaxRecordFrame)
		if err != nil {
			t.Fatal(err)
		}
		heads, bodies = append(heads, h), append(bodies, b)
	}
	if len(heads) != 4 {
		t.Fatalf("reply has %d records, want 4", len(heads))
	}
	build := func(edit func(hs []recordHeader, bs [][]byte) ([]recordHeader, [][]byte), end recordHeader) []byte {
		hs, bs := slices.Clone(heads), slices.Clone(bodies)
		hs, bs = edit(hs, bs)
		var b bytes.Buffer
		for i := range hs {
			wire.WriteJSON(&b, hs[i])
			wire.WriteFrame(&b, bs[i])
		}
		wire.WriteJSON(&b, end)
		return b.Bytes()
	}
	same := func(hs []recordHeader, bs [][]byte) ([]recordHeader, [][]byte) { return hs, bs }
	end := recordHeader{End: true}
	tests := []struct {
		name string
		data []byte
	}{
		{"remote error", build(same, recordHeader{End: true, Error: "disk on fire"})},
		{"truncated", good[:len(good)-3]},
		{"no end", good[:len(good)-len(build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) { return nil, nil }, end))]},
		{"out of order", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			h[0], h[1], b[0], b[1] = h[1], h[0], b[1], b[0]
			return h, b
		}, end)},
		{"repeated", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			return append(h[:1], h[0]), append(b[:1], b[0])
		}, end)},
		{"other host", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			h[0].URL = "http://evil.example/1"
			h[0].Cursor = archive.CursorOf(h[0].URL, h[0].Time, h[0].Digest).String()
			return h, b
		}, end)},
		{"cursor mismatch", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			h[0].Cursor = archive.CursorOf(h[0].URL, h[0].Time.Add(time.Hour), h[0].Digest).String()
			return h, b
		}, end)},
		{"body of another record", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			b[0] = b[1]
			return h, b
		}, end)},
		{"wrong digest", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			h[0].Digest = id.Sum([]byte("other"))
			h[0].Cursor = archive.CursorOf(h[0].URL, h[0].Time, h[0].Digest).String()
			return h, b
		}, end)},
		{"two members in one body", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			b[0] = append(slices.Clone(b[0]), b[0]...)
			return h, b
		}, end)},
		{"flipped byte", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			b[0] = slices.Clone(b[0])
			b[0][len(b[0])/2] ^= 0x20
			return h, b
		}, end)},
		{"not gzip", build(func(h []recordHeader, b [][]byte) ([]recordHeader, [][]byte) {
			b[0] = []byte("WARC/1.1\r\n")
			return h, b
		}, end)},
	}
	if err := drain(good, "h.example", nil); err != nil {
		t.Fatalf("good reply refused: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := drain(tc.data, "h.example", nil); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	// Resuming: a member must not send records up to the cursor.
	after, _ := archive.ParseCursor(heads[1].Cursor)
	if err := drain(good, "h.example", &after); err == nil {
		t.Fatal("records before the resume cursor accepted")
	}
	if err := drain(reply(t, n, "h.example", heads[1].Cursor), "h.example", &after); err != nil {
		t.Fatalf("resumed reply refused: %v", err)
	}
}

// TestMemberExportRevisits: a member asked for revisit records sends them
// in time order among the responses and they pass the checks; the same
// records are refused when the query did not ask for them, or when their
// header does not match them.
func TestMemberExportRevisits(t *testing.T) {
	n := storeNode(t, "http://h.example/1", "http://h.example/2")
	ctx := context.Background()
	for d := 2; d < 4; d++ { // checked unchanged on days 2 and 3
		if err := n.store.Touch(ctx, "http://h.example/1", q0.Add(time.Duration(d)*24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	req := queryRequest{Op: "export", Query: archive.Query{Host: "h.example"}, Revisits: true}
	if err := n.serveExport(ctx, req, &b); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	m := &Member{name: "test", r: bufio.NewReader(bytes.NewReader(data)), q: cdx.Query{URL: "h.example", Match: cdx.MatchHost, Revisits: true}}
	var types []string
	var revisit recordHeader
	var revisitBody []byte
	for {
		if err := m.next(); err != nil {
			t.Fatal(err)
		}
		if m.done {
			break
		}
		u, typ := recordOf(t, m.body)
		types = append(types, u+" "+typ)
		if typ == "revisit" {
			revisit, revisitBody = m.head, m.body
		}
	}
	want := []string{
		"http://h.example/1 response", "http://h.example/1 response", "http://h.example/1 revisit", "http://h.example/1 revisit",
		"http://h.example/2 response", "http://h.example/2 response",
	}
	if !slices.Equal(types, want) {
		t.Fatalf("records %q, want %q", types, want)
	}
	if err := drain(data, "h.example", nil); err == nil || !strings.Contains(err.Error(), "revisit") {
		t.Fatalf("revisits accepted in an export that did not ask for them (err %v)", err)
	}
	other := revisit
	other.Digest = id.Sum([]byte("another payload"))
	if _, err := checkRecord(revisitBody, other, true); err == nil {
		t.Fatal("revisit record accepted under another payload digest")
	}
	flipped := slices.Clone(revisitBody)
	flipped[len(flipped)/2] ^= 0x20
	if _, err := checkRecord(flipped, revisit, true); err == nil {
		t.Fatal("revisit record with a flipped byte accepted")
	}
}

// drain reads a whole reply, returning the first error.
func drain(data []byte, host string, after *archive.Cursor) error {
	m := &Member{name: "test", r: bufio.NewReader(bytes.NewReader(data)), q: cdx.Query{URL: host, Match: cdx.MatchHost}}
	if after != nil {
		m.last, m.hasLast = *after, true
	}
	for i := 0; i < 1000; i++ {
		if err := m.next(); err != nil {
			return err
		}
		if m.done {
			return nil
		}
	}
	return errors.New("reply never ends")
}

// FuzzMemberExport feeds arbitrary bytes as a member's export reply: the
// reader must never panic, and every record it accepts must pass the
// record check.
func FuzzMemberExport(f *testing.F) {
	n := storeNode(f, "http://h.example/1", "http://h.example/2")
	good := reply(f, n, "h.example", "")
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add(reply(f, requestNode(f, nil, "herod", "http://h.example/1"), "h.example", "")) // request records
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &Member{name: "fuzz", r: bufio.NewReader(bytes.NewReader(data)), q: cdx.Query{URL: "h.example", Match: cdx.MatchHost}}
		for i := 0; i < 100; i++ {
			if err := m.next(); err != nil || m.done {
				return
			}
			req, resp := splitRequest(m.body)
			_, hd, err := checkMember(resp, m.head, m.q.Revisits)
			if err == nil && req != nil {
				err = checkRequest(req, hd, m.head)
			}
			if err != nil {
				t.Fatalf("accepted a record that fails the check: %v", err)
			}
		}
	})
}

// recordOf returns the target URI and type of the one record in body.
func recordOf(t *testing.T, body []byte) (string, string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := archive.ReadRecord(bufio.NewReader(zr))
	if err != nil {
		t.Fatal(err)
	}
	return rec.Header.Get("Warc-Target-Uri"), rec.Header.Get("Warc-Type")
}
