package node

import (
	"crypto/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

func testKeySigner(t testing.TB) keySigner {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return keySigner{key: k, peer: pid.String()}
}

// TestPeerVerifier: a node's signature verifies under its peer id and
// under no other; a changed message fails.
func TestPeerVerifier(t *testing.T) {
	a, b := testKeySigner(t), testKeySigner(t)
	msg := archive.SignedMessage("http://example.org/", time.Unix(1_700_000_000, 0), id.Sum([]byte("x")))
	sig, err := a.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	var v peerVerifier
	if err := v.Verify(a.Peer(), msg, sig); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	if err := v.Verify(b.Peer(), msg, sig); err == nil {
		t.Fatal("signature verified under another peer")
	}
	if err := v.Verify(a.Peer(), append(msg, '!'), sig); err == nil {
		t.Fatal("changed message verified")
	}
	if err := v.Verify("not-a-peer", msg, sig); err == nil {
		t.Fatal("malformed peer id accepted")
	}
}

// BenchmarkSignVerify measures the signature work per version: signing
// with a node's Ed25519 identity key, and verifying from the peer id.
func BenchmarkSignVerify(b *testing.B) {
	s := testKeySigner(b)
	msg := archive.SignedMessage("http://example.org/some/page.html", time.Unix(1_700_000_000, 0), id.Sum([]byte("x")))
	sig, _ := s.Sign(msg)
	b.Run("sign", func(b *testing.B) {
		for range b.N {
			if _, err := s.Sign(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		var v peerVerifier
		for range b.N {
			if err := v.Verify(s.Peer(), msg, sig); err != nil {
				b.Fatal(err)
			}
		}
	})
}
