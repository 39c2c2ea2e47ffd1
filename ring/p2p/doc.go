// Package p2p is the production ring.Transport: ring messages over
// go-libp2p streams on protocol "/herod/ring/1.0.0".
//
// Each call opens one stream, writes one request frame and reads one
// reply frame (internal/wire uvarint-length frames holding JSON, at most
// MaxFrame bytes), under a deadline taken from the context (or
// DefaultTimeout). A Contact is dialed by adding /ip4/IP/tcp/PORT to the
// peerstore for its peer id; libp2p's Noise handshake authenticates the
// peer, so a reply always comes from Contact.Peer.
//
// Verify is the thesis's nonce check: it opens a fresh, direct,
// authenticated connection to exactly the claimed ip:port, expecting the
// claimed peer id, and closes it. An address that answers as another peer
// fails with ring.ErrBadPeer.
//
// ProtectNeighbors tags the ring's current neighbours in the host's
// connection manager so that trimming never closes them.
//
// DHT runs go-libp2p-kad-dht in server mode on the private prefix
// "/herod" (no values, no provider records): NewDHT bootstraps from any
// known herod node, Peers lists further members to join through, and
// Resolve (a ring.Resolver) finds the current address of a ring peer
// whose address changed. A LateDHT is the ring's Resolver from its
// creation while the DHT itself starts only when the node joins (Start,
// which falls back to no bootstrap members when none answers).
//
// A Transport, a DHT and a LateDHT are safe for concurrent use. None owns
// the host.
package p2p
