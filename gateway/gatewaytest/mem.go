package gatewaytest

import (
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/memarchive"
)

// Mem is an in-memory gateway.Archive and gateway.Lister: the reference
// implementation the suite is checked against, and a stand-in archive for
// tests of code that serves a gateway. It is safe for concurrent use. It
// lives in internal/memarchive, below the gateway, so that the gateway's
// own tests use it too.
type Mem = memarchive.Mem

var (
	_ gateway.Archive = (*Mem)(nil)
	_ gateway.Lister  = (*Mem)(nil)
)

// NewMem returns an empty Mem.
func NewMem() *Mem { return memarchive.New() }
