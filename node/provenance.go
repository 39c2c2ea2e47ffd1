package node

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
)

// Every version this node fetches is signed with its libp2p identity key
// (archive.Signer), and every version it imports from a replica must carry
// a valid signature by the peer that fetched it (archive.Verifier): the
// peer id names the key (Ed25519 ids embed it), so no key directory is
// needed. See archive/provenance.go for what a signature proves.

// keySigner signs with the node's identity key.
type keySigner struct {
	key  crypto.PrivKey
	peer string
}

var (
	_ archive.Signer   = keySigner{}
	_ archive.Verifier = peerVerifier{}
)

// Peer implements archive.Signer.
func (k keySigner) Peer() string { return k.peer }

// Sign implements archive.Signer.
func (k keySigner) Sign(msg []byte) ([]byte, error) {
	sig, err := k.key.Sign(msg)
	if err != nil {
		return nil, fmt.Errorf("node sign: %w", err)
	}
	return sig, nil
}

// peerVerifier checks signatures with the public key a peer id embeds.
type peerVerifier struct{}

// errBadSignature reports a signature that does not verify.
var errBadSignature = errors.New("node: bad signature")

// Verify implements archive.Verifier.
func (peerVerifier) Verify(p string, msg, sig []byte) error {
	pid, err := peer.Decode(p)
	if err != nil {
		return fmt.Errorf("verify: peer %q: %w", p, err)
	}
	pub, err := pid.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("verify: peer %s: no public key in its id: %w", p, err)
	}
	ok, err := pub.Verify(msg, sig)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w by %s", errBadSignature, p)
	}
	return nil
}
