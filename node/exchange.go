package node

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node/identity"
)

// ExportSigner implements gateway.WACZSigner: WACZ packages exported
// through this node's gateway are signed with its identity key, the key
// that signs the versions it fetches (see archive/exchange for what the
// signature asserts). It returns nil if the host holds no private key.
func (r *resolver) ExportSigner() archive.Signer {
	n := (*Node)(r)
	key := n.host.Peerstore().PrivKey(n.host.ID())
	if key == nil {
		return nil
	}
	s, err := identity.NewSigner(key)
	if err != nil {
		return nil
	}
	return s
}

var _ gateway.WACZSigner = (*resolver)(nil)

// DataDirSigner returns a signer with the identity key of the node whose
// data directory is dir, for exports made from disk (herod export --data
// --wacz). Unlike starting a node it never creates a key: a directory
// without one is an error.
func DataDirSigner(dir string) (archive.Signer, error) {
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	k, err := crypto.UnmarshalPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("node identity %s: %w", filepath.Join(dir, identityFile), err)
	}
	s, err := identity.NewSigner(k)
	if err != nil {
		return nil, fmt.Errorf("node identity: %w", err)
	}
	return s, nil
}
