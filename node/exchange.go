package node

import (
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
// --wacz); it never creates a key (identity.DataDirSigner).
func DataDirSigner(dir string) (archive.Signer, error) {
	s, err := identity.DataDirSigner(dir)
	if err != nil {
		return nil, err
	}
	return s, nil
}
