// Package p2ptest builds in-memory libp2p networks for the tests of the
// node's protocol packages: hosts linked by libp2p's mock network
// (Hosts), and the stream opener the packages take from the node
// (Opener). It is for tests only.
//
// Hosts and Opener are safe for concurrent use; the network closes when
// the test that asked for it ends.
package p2ptest
