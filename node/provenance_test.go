package node

import (
	"testing"

	"github.com/herod-archive/herod/node/identity"
)

// testKeySigner returns the signer of a fresh node identity.
func testKeySigner(t testing.TB) identity.Signer {
	t.Helper()
	s, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
