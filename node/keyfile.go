package node

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// identityFile holds the node's libp2p private key inside the data directory,
// so that its peer id (and with it the ids of its virtual servers) survives
// restarts.
const identityFile = "identity.key"

// loadIdentity reads the node's private key from dir, creating and saving a
// new Ed25519 key on first use. The write is atomic: a crash leaves either no
// key or a complete one.
func loadIdentity(dir string) (crypto.PrivKey, error) {
	p := filepath.Join(dir, identityFile)
	b, err := os.ReadFile(p)
	if err == nil {
		k, err := crypto.UnmarshalPrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("node identity %s: %w", p, err)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("node identity: generate: %w", err)
	}
	b, err = crypto.MarshalPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("node identity: marshal: %w", err)
	}
	if err := writeFileAtomic(p, b, 0o600); err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	return k, nil
}

// writeFileAtomic writes b to path through a synced temporary file and a rename.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
