package identity

import (
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Signer signs with a libp2p identity key, in the name of its peer id.
// It implements archive.Signer.
type Signer struct {
	key  crypto.PrivKey
	peer string
}

// NewSigner returns the signer of key, named by the peer id it derives.
func NewSigner(key crypto.PrivKey) (Signer, error) {
	p, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return Signer{}, fmt.Errorf("identity: %w", err)
	}
	return Signer{key: key, peer: p.String()}, nil
}

// Generate returns the signer of a fresh Ed25519 identity.
func Generate() (Signer, error) {
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return Signer{}, fmt.Errorf("identity: %w", err)
	}
	return NewSigner(k)
}

// Peer returns the peer id the signer signs as.
func (s Signer) Peer() string { return s.peer }

// Sign signs msg.
func (s Signer) Sign(msg []byte) ([]byte, error) {
	sig, err := s.key.Sign(msg)
	if err != nil {
		return nil, fmt.Errorf("identity sign: %w", err)
	}
	return sig, nil
}

// ErrBadSignature reports a signature that does not verify.
var ErrBadSignature = errors.New("identity: bad signature")

// Verifier checks signatures with the public key a peer id embeds. It
// implements archive.Verifier. The keys of the last peers it checked are
// kept decoded (at most maxKeys), as a replica checks every record a
// member sends it.
type Verifier struct{}

// Verify reports whether sig is p's signature of msg.
func (Verifier) Verify(p string, msg, sig []byte) error {
	pub, err := publicKey(p)
	if err != nil {
		return err
	}
	ok, err := pub.Verify(msg, sig)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w by %s", ErrBadSignature, p)
	}
	return nil
}

// maxKeys bounds the decoded keys Verifier keeps: a ring's members and
// more; when full, the set starts afresh.
const maxKeys = 4096

var keys struct {
	sync.Mutex
	m map[string]crypto.PubKey
}

// publicKey returns the public key peer id p embeds.
func publicKey(p string) (crypto.PubKey, error) {
	keys.Lock()
	pub, ok := keys.m[p]
	keys.Unlock()
	if ok {
		return pub, nil
	}
	pid, err := peer.Decode(p)
	if err != nil {
		return nil, fmt.Errorf("verify: peer %q: %w", p, err)
	}
	pub, err = pid.ExtractPublicKey()
	if err != nil {
		return nil, fmt.Errorf("verify: peer %s: no public key in its id: %w", p, err)
	}
	keys.Lock()
	if keys.m == nil || len(keys.m) >= maxKeys {
		keys.m = make(map[string]crypto.PubKey)
	}
	keys.m[p] = pub
	keys.Unlock()
	return pub, nil
}
