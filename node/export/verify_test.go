package export

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/node/identity"
)

// lyingSigner signs with one key in the name of another peer.
type lyingSigner struct {
	name string
	key  identity.Signer
}

func (s lyingSigner) Peer() string                    { return s.name }
func (s lyingSigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg) }

// signedNode returns a member whose store signs with signer (nil: none)
// and holds, for each URL, versions on days 0 and 1, checked unchanged
// on day 2.
func signedNode(t *testing.T, signer archive.Signer, urls ...string) *testNode {
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
		for d := range 2 {
			c := archive.Capture{URL: u, Time: q0.Add(time.Duration(d) * 24 * time.Hour), Status: 200,
				Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprintf("<p>%s on day %d</p>", u, d))}
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

// exportOf returns the merged export of the members' replies as a node
// whose store is victim merges them: every member verified by it.
func exportOf(t *testing.T, victim *archive.Store, ns ...*testNode) ([]string, int) {
	t.Helper()
	q := cdx.Query{URL: "h.example", Match: cdx.MatchHost, Revisits: true}
	var ms []*Member
	for i, n := range ns {
		var b bytes.Buffer
		req := queryRequest{Op: "export", Query: archive.Query{Host: "h.example"}, Revisits: true}
		if err := n.serveExport(context.Background(), req, &b); err != nil {
			t.Fatal(err)
		}
		m, err := Open(fmt.Sprint("m", i), &b, nil, q, nil, victim)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var out recordWriter
	if err := Merge(ms, &out, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range out {
		u, typ := recordOf(t, rec)
		got = append(got, u+" "+typ)
	}
	n, _ := Dropped(ms)
	return got, n
}

// recordWriter keeps each Write, one record as Merge writes them.
type recordWriter [][]byte

func (w *recordWriter) Write(p []byte) (int, error) {
	*w = append(*w, bytes.Clone(p))
	return len(p), nil
}

// TestRemoteRecordsVerified: a remote member's records are merged only
// when they pass the asking node's import check. Unsigned records,
// records signed by another key in an honest peer's name, records of a
// purged peer, and revisits referring to none of those that passed are
// dropped and counted; a genuine member's records and revisits are
// merged.
func TestRemoteRecordsVerified(t *testing.T) {
	honestKey, _ := identity.Generate()
	hostileKey, _ := identity.Generate()
	victimKey, _ := identity.Generate()
	honest := signedNode(t, honestKey, "http://h.example/1", "http://h.example/3")
	unsigned := signedNode(t, nil, "http://h.example/2")
	forged := signedNode(t, lyingSigner{honestKey.Peer(), hostileKey}, "http://h.example/4")
	victim := signedNode(t, victimKey).store

	got, dropped := exportOf(t, victim, honest, unsigned, forged)
	want := []string{
		"http://h.example/1 response", "http://h.example/1 response", "http://h.example/1 revisit",
		"http://h.example/3 response", "http://h.example/3 response", "http://h.example/3 revisit",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("exported %q, want %q", got, want)
	}
	if dropped != 6 { // two responses and a revisit of each hostile URL
		t.Fatalf("dropped %d records, want 6", dropped)
	}

	// Once the honest peer is purged, its records go too.
	if _, err := victim.PurgePeer(context.Background(), honestKey.Peer()); err != nil {
		t.Fatal(err)
	}
	if got, dropped := exportOf(t, victim, honest); len(got) != 0 || dropped != 6 {
		t.Fatalf("purged peer's records: exported %q, dropped %d", got, dropped)
	}
}

// TestResumedRevisitVerified: in an export resumed after a URL's
// responses, a remote member's revisit that refers to one of them (in
// the part delivered before) is merged, as is one referring to a
// response verified after the cursor.
func TestResumedRevisitVerified(t *testing.T) {
	key, _ := identity.Generate()
	victimKey, _ := identity.Generate()
	n := signedNode(t, key, "http://h.example/1")
	victim := signedNode(t, victimKey).store
	q := cdx.Query{URL: "h.example", Match: cdx.MatchHost, Revisits: true}
	vs, err := n.store.Versions(context.Background(), "http://h.example/1")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions: %d, %v", len(vs), err)
	}
	for _, tc := range []struct {
		after   archive.Version
		records int
	}{{vs[1], 1}, {vs[0], 2}} {
		cursor := archive.CursorOf(tc.after.URL, tc.after.Time, tc.after.Digest).String()
		var b bytes.Buffer
		req := queryRequest{Op: "export", Query: archive.Query{Host: "h.example"}, Revisits: true, After: cursor}
		if err := n.serveExport(context.Background(), req, &b); err != nil {
			t.Fatal(err)
		}
		after, err := archive.ParseCursor(cursor)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Open("m", &b, nil, q, &after, victim)
		if err != nil {
			t.Fatal(err)
		}
		var out recordWriter
		if err := Merge([]*Member{m}, &out, nil); err != nil {
			t.Fatal(err)
		}
		if d, why := m.Dropped(); len(out) != tc.records || d != 0 {
			t.Fatalf("resumed after %s: %d records, %d dropped (%v)", cursor, len(out), d, why)
		}
	}
}
