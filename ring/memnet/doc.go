// Package memnet is an in-memory ring.Transport for tests and
// simulations: a Network of endpoints addressed by "ip:port", with
// controls for message loss, latency, partitions and node death, all
// driven by a seeded random source so that runs are deterministic.
//
// Calls are direct function calls in the caller's goroutine: no goroutine
// and no serialization per message, which is what lets the simulator run
// 10,000 virtual servers on two cores. Latency is accounted, not slept:
// a call whose round trip exceeds the network's call timeout fails as a
// timeout, and the total simulated latency is reported in Stats.
//
// Authentication is simulated the way the Noise handshake works on
// libp2p: a Call or Verify to Contact{Peer, Addr} succeeds only if the
// endpoint registered at Addr is Peer. The handler learns the caller's
// real peer id, whatever the caller claims in its messages.
//
// Clock is a fake ring.Clock advanced by hand.
//
// Everything is safe for concurrent use; the network's lock is never held
// while a handler runs.
package memnet
