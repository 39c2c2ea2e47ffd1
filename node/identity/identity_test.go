package identity

import (
	"errors"
	"testing"
)

// TestVerifier: a signature verifies under its signer's peer id and under
// no other; a changed message fails; a malformed id is refused.
func TestVerifier(t *testing.T) {
	a, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("http://example.org/ 20231114221320 sha1:x")
	sig, err := a.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	var v Verifier
	if err := v.Verify(a.Peer(), msg, sig); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	if err := v.Verify(b.Peer(), msg, sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("under another peer: %v, want ErrBadSignature", err)
	}
	if err := v.Verify(a.Peer(), append(msg, '!'), sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("changed message: %v, want ErrBadSignature", err)
	}
	if err := v.Verify("not-a-peer", msg, sig); err == nil {
		t.Fatal("malformed peer id accepted")
	}
}

// TestVerifierKeysBounded: the decoded keys Verifier keeps stay at most
// maxKeys however many peers it checks, and a key kept still refuses a
// signature by another peer.
func TestVerifierKeysBounded(t *testing.T) {
	msg := []byte("m")
	a, sig := signed(t, msg)
	var v Verifier
	for range maxKeys + 10 {
		b, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(b.Peer(), msg, sig); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("another peer's key: %v, want ErrBadSignature", err)
		}
		if err := v.Verify(a.Peer(), msg, sig); err != nil {
			t.Fatalf("own signature: %v", err)
		}
		keys.Lock()
		n := len(keys.m)
		keys.Unlock()
		if n > maxKeys {
			t.Fatalf("%d keys kept, want at most %d", n, maxKeys)
		}
	}
}

// BenchmarkSignVerify measures the signature work per version: signing
// with an Ed25519 identity key, and verifying from the peer id (its key
// kept decoded, and decoded each time).
func BenchmarkSignVerify(b *testing.B) {
	msg := []byte("http://example.org/some/page.html 20231114221320 sha1:x")
	s, sig := signed(b, msg)
	b.Run("sign", func(b *testing.B) {
		for range b.N {
			if _, err := s.Sign(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		var v Verifier
		for range b.N {
			if err := v.Verify(s.Peer(), msg, sig); err != nil {
				b.Fatal(err)
			}
		}
	})
	// verify-decoding decodes the key from the peer id at every check, as
	// Verify did before it kept keys.
	b.Run("verify-decoding", func(b *testing.B) {
		var v Verifier
		for range b.N {
			keys.Lock()
			keys.m = nil
			keys.Unlock()
			if err := v.Verify(s.Peer(), msg, sig); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// signed returns a new identity and its signature of msg.
func signed(tb testing.TB, msg []byte) (Signer, []byte) {
	tb.Helper()
	s, err := Generate()
	if err != nil {
		tb.Fatal(err)
	}
	sig, err := s.Sign(msg)
	if err != nil {
		tb.Fatal(err)
	}
	return s, sig
}
