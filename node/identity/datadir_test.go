package identity

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLoadKey: the first LoadKey creates the key file (private to its
// owner), later ones and DataDirSigner read the same key back.
func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := DataDirSigner(dir); err == nil {
		t.Fatal("DataDirSigner made up a key")
	}
	k1, err := LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	k2, err := LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equals(k2) {
		t.Fatal("a second LoadKey returned another key")
	}
	s, err := DataDirSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := NewSigner(k1)
	if s.Peer() != want.Peer() {
		t.Fatalf("DataDirSigner signs as %s, want %s", s.Peer(), want.Peer())
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(dir); err == nil {
		t.Fatal("LoadKey accepted a malformed key")
	}
}

// TestIndexes: saved indexes come back while their number is the one
// asked for, and not otherwise.
func TestIndexes(t *testing.T) {
	dir := t.TempDir()
	if idx, err := LoadIndexes(dir, 3); err != nil || idx != nil {
		t.Fatalf("nothing saved: %v, %v", idx, err)
	}
	if err := SaveIndexes(dir, []int{5, 17, 40}); err != nil {
		t.Fatal(err)
	}
	if idx, err := LoadIndexes(dir, 3); err != nil || !slices.Equal(idx, []int{5, 17, 40}) {
		t.Fatalf("LoadIndexes = %v, %v", idx, err)
	}
	if idx, err := LoadIndexes(dir, 4); err != nil || idx != nil {
		t.Fatalf("other --vnodes: %v, %v", idx, err)
	}
	if err := os.WriteFile(filepath.Join(dir, IndexesFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIndexes(dir, 3); err == nil {
		t.Fatal("LoadIndexes accepted a malformed file")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(m) > 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}
