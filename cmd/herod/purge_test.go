package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/herod-archive/herod/node/identity"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
)

// newTestSigner returns the signer of a fresh node identity.
func newTestSigner(t *testing.T) identity.Signer {
	t.Helper()
	s, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPurgeCmd: herod purge removes the versions one peer signed from a
// stopped node's archive and leaves the others.
func TestPurgeCmd(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	dir := filepath.Join(data, "archive")
	bad, good := newTestSigner(t), newTestSigner(t)
	for i, signer := range []identity.Signer{bad, good, bad} {
		s, err := archive.Open(dir, archive.Options{Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		c := archive.Capture{URL: fmt.Sprintf("http://example.org/p%d", i), Time: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC),
			Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(fmt.Sprint("page ", i))}
		if _, _, err := s.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	var out, errOut bytes.Buffer
	if err := purgeCmd(ctx, []string{"--data", data, "--peer", bad.Peer()}, &out, &errOut); err != nil {
		t.Fatalf("purge: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "2 versions removed from the index") {
		t.Fatalf("purge output:\n%s", out.String())
	}
	s, err := archive.Open(dir, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Versions != 1 {
		t.Fatalf("%d versions left, want 1", st.Versions)
	}
	if err := purgeCmd(ctx, []string{"--data", data, "--peer", "not-a-peer"}, &out, &errOut); err == nil {
		t.Fatal("purge accepted a malformed peer id")
	}
}

// TestPurgeCmdRunning: herod purge asks a running node through its admin
// API with the token of its data directory; with --node given, a node
// that does not answer is an error, not an offline purge.
func TestPurgeCmdRunning(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	token, err := gateway.LoadAdminToken(data)
	if err != nil {
		t.Fatal(err)
	}
	who := newTestSigner(t).Peer()
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/purge" || r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		fmt.Fprintf(w, `{"peer": %q, "versions": 3}`, got)
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	if err := purgeCmd(ctx, []string{"--node", srv.URL, "--data", data, "--peer", who}, &out, &errOut); err != nil {
		t.Fatalf("purge: %v\n%s", err, errOut.String())
	}
	if got != who || !strings.Contains(out.String(), "3 versions removed from the running node") {
		t.Fatalf("node got %q; output:\n%s", got, out.String())
	}
	srv.Close()
	if err := purgeCmd(ctx, []string{"--node", srv.URL, "--data", data, "--peer", who}, &out, &errOut); err == nil {
		t.Fatal("purge against a stopped --node succeeded")
	}
}
