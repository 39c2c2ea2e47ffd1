package export

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/identity"
)

// requestNode returns a member whose store signs with signer (nil: none)
// and holds, for each URL, versions on days 0 and 1, the first carrying
// the request head sent for it (naming agent), checked unchanged on day 2.
func requestNode(t testing.TB, signer archive.Signer, agent string, urls ...string) *testNode {
	t.Helper()
	o := archive.Options{NoSync: true, Verifier: identity.Verifier{}}
	if signer != nil {
		o.Signer = signer
	}
	s, err := archive.Open(filepath.Join(t.TempDir(), "archive"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	for _, u := range urls {
		p, _ := url.Parse(u)
		for d := range 2 {
			c := archive.Capture{URL: u, Time: q0.Add(time.Duration(d) * 24 * time.Hour), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprintf("<p>%s on day %d</p>", u, d))}
			if d == 0 {
				c.Request = []byte("GET " + p.Path + " HTTP/1.1\r\nHost: " + p.Host + "\r\nUser-Agent: " + agent + "\r\n\r\n")
			}
			if _, _, err := s.Put(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Touch(ctx, u, q0.Add(48*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	return &testNode{store: s}
}

// frames splits a reply into its record headers and bodies.
func frames(t *testing.T, data []byte) ([]recordHeader, [][]byte) {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(data))
	var hs []recordHeader
	var bs [][]byte
	for {
		var h recordHeader
		if err := wire.ReadJSON(r, maxHeaderFrame, &h); err != nil {
			t.Fatal(err)
		}
		if h.End {
			return hs, bs
		}
		b, err := wire.ReadFrame(r, MaxRecordFrame)
		if err != nil {
			t.Fatal(err)
		}
		hs, bs = append(hs, h), append(bs, b)
	}
}

// joinFrames renders record headers and bodies as a complete reply.
func joinFrames(hs []recordHeader, bs [][]byte) []byte {
	var b bytes.Buffer
	for i := range hs {
		wire.WriteJSON(&b, hs[i])
		wire.WriteFrame(&b, bs[i])
	}
	wire.WriteJSON(&b, recordHeader{End: true})
	return b.Bytes()
}

// drainRevisits is drain for a query with revisits.
func drainRevisits(data []byte) error {
	m := &Member{name: "test", r: bufio.NewReader(bytes.NewReader(data)), q: cdx.Query{URL: "h.example", Match: cdx.MatchHost, Revisits: true}}
	for range 1000 {
		if err := m.next(); err != nil || m.done {
			return err
		}
	}
	return errors.New("reply never ends")
}

// TestMergeRequestRecords: a member sends a response's request record in
// the response's frame; the merged stream holds each request record
// right before its response, byte for byte the members' own exports of
// each URL, and a remote member's records pass the asking node's checks.
func TestMergeRequestRecords(t *testing.T) {
	keyA, _ := identity.Generate()
	keyB, _ := identity.Generate()
	victimKey, _ := identity.Generate()
	a := requestNode(t, keyA, "herod", "http://h.example/1", "http://h.example/3")
	b := requestNode(t, keyB, "herod", "http://h.example/2")
	victim := requestNode(t, victimKey, "herod").store
	q := cdx.Query{URL: "h.example", Match: cdx.MatchHost, Revisits: true}
	var ms []*Member
	var want bytes.Buffer
	for i, n := range []*testNode{a, b} {
		var rb bytes.Buffer
		req := queryRequest{Op: "export", Query: archive.Query{Host: "h.example"}, Revisits: true}
		if err := n.serveExport(context.Background(), req, &rb); err != nil {
			t.Fatal(err)
		}
		m, err := Open(fmt.Sprint("m", i), &rb, nil, q, nil, victim)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var out recordWriter
	var cursors []string
	if err := Merge(ms, &out, func(c string) { cursors = append(cursors, c) }); err != nil {
		t.Fatal(err)
	}
	if n, why := Dropped(ms); n != 0 {
		t.Fatalf("dropped %d records: %v", n, why)
	}
	var got []string
	for _, body := range out {
		if req, rest := splitRequest(body); req != nil {
			got = append(got, req.Header.Get("Warc-Target-Uri")+" request")
			body = rest
		}
		u, typ := recordOf(t, body)
		got = append(got, u+" "+typ)
	}
	wantTypes := []string{
		"http://h.example/1 request", "http://h.example/1 response", "http://h.example/1 response", "http://h.example/1 revisit",
		"http://h.example/2 request", "http://h.example/2 response", "http://h.example/2 response", "http://h.example/2 revisit",
		"http://h.example/3 request", "http://h.example/3 response", "http://h.example/3 response", "http://h.example/3 revisit",
	}
	if !slices.Equal(got, wantTypes) || len(cursors) != 9 {
		t.Fatalf("merged %q with %d cursors, want %q and 9", got, len(cursors), wantTypes)
	}
	for _, part := range []struct {
		n *testNode
		u string
	}{{a, "http://h.example/1"}, {b, "http://h.example/2"}, {a, "http://h.example/3"}} {
		if _, err := part.n.store.Export(context.Background(), archive.ExportOptions{Query: archive.Query{URL: part.u}, Revisits: true}, &want, nil); err != nil {
			t.Fatal(err)
		}
	}
	if merged := bytes.Join(out, nil); !bytes.Equal(merged, want.Bytes()) {
		t.Fatalf("merged %d bytes, not the members' exports (%d bytes)", len(merged), want.Len())
	}
}

// TestMemberRequestChecks: a request record is accepted only in its
// response's frame and only when it is that response's: one alone in a
// frame (without its response), before a revisit or a response without a
// request head, with another head, or doubled is a bad reply.
func TestMemberRequestChecks(t *testing.T) {
	n := requestNode(t, nil, "herod", "http://h.example/1")
	other := requestNode(t, nil, "other agent", "http://h.example/1")
	var rb, ob bytes.Buffer
	req := queryRequest{Op: "export", Query: archive.Query{Host: "h.example"}, Revisits: true}
	if err := n.serveExport(context.Background(), req, &rb); err != nil {
		t.Fatal(err)
	}
	if err := other.serveExport(context.Background(), req, &ob); err != nil {
		t.Fatal(err)
	}
	hs, bs := frames(t, rb.Bytes())
	_, obs := frames(t, ob.Bytes())
	if len(bs) != 3 {
		t.Fatalf("reply has %d records, want 3 (response with request, response, revisit)", len(bs))
	}
	if err := drainRevisits(rb.Bytes()); err != nil {
		t.Fatalf("good reply refused: %v", err)
	}
	r0, rest := splitRequest(bs[0])
	if r0 == nil {
		t.Fatal("first frame holds no request record")
	}
	reqMember := bs[0][:len(bs[0])-len(rest)]
	_, orest := splitRequest(obs[0])
	otherReq := obs[0][:len(obs[0])-len(orest)]
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := map[string][]byte{
		"request without its response":             joinFrames(hs[:1], [][]byte{reqMember}),
		"request before a revisit":                 joinFrames(hs, [][]byte{bs[0], bs[1], cat(reqMember, bs[2])}),
		"request before a response without a head": joinFrames(hs, [][]byte{bs[0], cat(reqMember, bs[1]), bs[2]}),
		"another head":                             joinFrames(hs, [][]byte{cat(otherReq, rest), bs[1], bs[2]}),
		"doubled":                                  joinFrames(hs, [][]byte{cat(reqMember, bs[0]), bs[1], bs[2]}),
		"after response":                           joinFrames(hs, [][]byte{cat(rest, reqMember), bs[1], bs[2]}),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if err := drainRevisits(data); !errors.Is(err, ErrBadReply) {
				t.Fatalf("got %v, want a bad reply", err)
			}
		})
	}
	// The response alone (a member that writes no request records) passes.
	if err := drainRevisits(joinFrames(hs, [][]byte{rest, bs[1], bs[2]})); err != nil {
		t.Fatalf("response without its request record refused: %v", err)
	}
}
