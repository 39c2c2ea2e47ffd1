package node

import (
	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
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
	return keySigner{key: key, peer: n.self.Peer}
}

var _ gateway.WACZSigner = (*resolver)(nil)
