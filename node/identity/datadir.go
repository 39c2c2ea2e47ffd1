package identity

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/herod-archive/herod/internal/atomicfile"
)

// KeyFile holds the node's libp2p private key inside the data directory,
// so that its peer id (and with it the ids of its virtual servers) survives
// restarts.
const KeyFile = "identity.key"

// LoadKey reads the node's private key from the data directory dir,
// creating and saving a new Ed25519 key on first use. The write is atomic:
// a crash leaves either no key or a complete one.
func LoadKey(dir string) (crypto.PrivKey, error) {
	p := filepath.Join(dir, KeyFile)
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
	if err := atomicfile.Write(p, b, 0o600); err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	return k, nil
}

// DataDirSigner returns a signer with the identity key of the node whose
// data directory is dir, for exports made from disk (herod export --data
// --wacz). Unlike LoadKey it never creates a key: a directory without one
// is an error.
func DataDirSigner(dir string) (Signer, error) {
	b, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return Signer{}, fmt.Errorf("node identity: %w", err)
	}
	k, err := crypto.UnmarshalPrivateKey(b)
	if err != nil {
		return Signer{}, fmt.Errorf("node identity %s: %w", filepath.Join(dir, KeyFile), err)
	}
	s, err := NewSigner(k)
	if err != nil {
		return Signer{}, fmt.Errorf("node identity: %w", err)
	}
	return s, nil
}

// IndexesFile records which virtual-server indexes the node runs. A node
// that chose its indexes when it first joined (ring.Config.ChooseIndexes)
// must come back at the same positions after a restart, or the URLs it
// stores would belong to someone else.
const IndexesFile = "vservers.json"

type savedIndexes struct {
	Indexes []int `json:"indexes"`
}

// LoadIndexes returns the indexes saved in the data directory dir, nil if
// none are saved or their number differs from want (the operator changed
// --vnodes: the node then chooses anew).
func LoadIndexes(dir string, want int) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, IndexesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("virtual-server indexes: %w", err)
	}
	var s savedIndexes
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("virtual-server indexes %s: %w", IndexesFile, err)
	}
	if len(s.Indexes) != want {
		return nil, nil
	}
	return s.Indexes, nil
}

// SaveIndexes records the ring's current indexes idx in the data
// directory dir, atomically.
func SaveIndexes(dir string, idx []int) error {
	b, err := json.Marshal(savedIndexes{Indexes: idx})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, IndexesFile), b, 0o644); err != nil {
		return fmt.Errorf("virtual-server indexes: %w", err)
	}
	return nil
}
