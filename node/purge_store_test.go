package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/identity"
)

// copyAll imports every file of src into dst.
func copyAll(t *testing.T, ctx context.Context, dst, src *archive.Store) {
	t.Helper()
	var zero id.ID
	ents, err := src.Entries(ctx, zero, zero)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := src.ReadFile(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := dst.Import(ctx, e.Name(), data); err != nil {
			t.Fatalf("import %s: %v", e.Name(), err)
		}
	}
}

// TestStorePurgePeer checks archive.Store.PurgePeer through the public
// API only, so that it holds for any store layout: on an open store that
// holds versions signed by two peers, purging one removes exactly its
// versions (the totals, the directory sums and a rebuilt index all agree
// with a store that never held them), refuses its records from then on,
// and a second purge removes nothing.
func TestStorePurgePeer(t *testing.T) {
	ctx := context.Background()
	bad, good := testKeySigner(t), testKeySigner(t)
	open := func(name string, signer archive.Signer) *archive.Store {
		s, err := archive.Open(filepath.Join(t.TempDir(), name), archive.Options{Signer: signer, Verifier: identity.Verifier{},
			Now: func() time.Time { return time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	srcBad, srcGood := open("bad", bad), open("good", good)
	put := func(s *archive.Store, u string, day int, body string) {
		c := archive.Capture{URL: u, Time: time.Date(2026, 11, 20+day, 0, 0, 0, 0, time.UTC), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(body)}
		if _, _, err := s.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// Only the bad peer's: p0..p19. Both: shared (one version each). Only
	// the good peer's: g0..g9.
	for i := range 20 {
		put(srcBad, fmt.Sprintf("http://example.org/p%d", i), 0, fmt.Sprint("forged ", i))
		put(srcBad, fmt.Sprintf("http://example.org/p%d", i), 1, fmt.Sprint("forged again ", i))
	}
	put(srcBad, "http://example.org/shared", 0, "forged shared")
	put(srcGood, "http://example.org/shared", 1, "true shared")
	for i := range 10 {
		put(srcGood, fmt.Sprintf("http://example.org/g%d", i), 0, fmt.Sprint("true ", i))
	}

	s, want := open("s", nil), open("want", nil)
	copyAll(t, ctx, s, srcBad)
	copyAll(t, ctx, s, srcGood)
	copyAll(t, ctx, want, srcGood)
	if got := s.Stats().Versions; got != 52 {
		t.Fatalf("%d versions before the purge, want 52", got)
	}
	if s.Refuses(bad.Peer()) {
		t.Fatal("peer refused before its purge")
	}

	n, err := s.PurgePeer(ctx, bad.Peer())
	if err != nil {
		t.Fatal(err)
	}
	if n != 41 {
		t.Errorf("purged %d versions, want 41", n)
	}
	if !s.Refuses(bad.Peer()) || s.Refuses(good.Peer()) {
		t.Errorf("refuses bad %v, good %v; want true, false", s.Refuses(bad.Peer()), s.Refuses(good.Peer()))
	}
	got, exp := s.Stats(), want.Stats()
	if got.Versions != exp.Versions || got.URLs != exp.URLs || got.Bytes != exp.Bytes || got.PayloadBytes != exp.PayloadBytes {
		t.Errorf("totals after the purge %+v, want those of a store that never held the peer's %+v", got, exp)
	}
	gs, err := s.DirHash(ctx, archive.RootLevel, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := want.DirHash(ctx, archive.RootLevel, nil)
	if gs != ws {
		t.Errorf("root sum %+v after the purge, want %+v", gs, ws)
	}
	if vs, err := s.Versions(ctx, "http://example.org/p3"); err != nil || len(vs) != 0 {
		t.Errorf("purged URL: %d versions, %v", len(vs), err)
	}
	if _, c, err := s.Get(ctx, "http://example.org/shared", time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)); err != nil || string(c.Body) != "true shared" {
		t.Errorf("shared URL at the purged version's time: %v, want the good peer's version", err)
	}
	if vs, _ := s.Versions(ctx, "http://example.org/shared"); len(vs) != 1 {
		t.Errorf("shared URL: %d versions, want the good peer's 1", len(vs))
	}
	// Replication must not bring the versions back.
	var zero id.ID
	ents, _ := srcBad.Entries(ctx, zero, zero)
	data, _ := srcBad.ReadFile(ctx, ents[0])
	if _, _, err := s.Import(ctx, ents[0].Name(), data); !errors.Is(err, archive.ErrRefusedPeer) {
		t.Errorf("import of a purged peer's file: %v, want ErrRefusedPeer", err)
	}
	if n, err := s.PurgePeer(ctx, bad.Peer()); err != nil || n != 0 {
		t.Errorf("second purge: %d, %v; want 0, nil", n, err)
	}
	if _, err := s.PurgePeer(ctx, ""); err == nil {
		t.Error("purge of no peer accepted")
	}

	// The index agrees with the files left, and the refusal survives a
	// restart.
	dir := s.Dir()
	s.Close()
	rep, err := archive.Fsck(ctx, dir, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Versions != int(exp.Versions) {
		t.Errorf("fsck after the purge: %+v", rep)
	}
	s2, err := archive.Open(dir, archive.Options{Verifier: identity.Verifier{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !s2.Refuses(bad.Peer()) {
		t.Error("peer not refused after a restart")
	}
}
