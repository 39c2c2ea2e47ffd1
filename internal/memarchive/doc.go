// Package memarchive holds Mem, an in-memory archive of captures: the
// reference implementation of the gateway's Archive and Lister contracts
// (checked by gateway/gatewaytest.TestArchive) and the stand-in archive of
// every test that serves a gateway, the gateway's own tests included.
//
// It sits below the gateway and imports nothing of it, so that the
// package gateway's internal tests can use it without an import cycle;
// gatewaytest re-exports it as gatewaytest.Mem and asserts there that it
// satisfies gateway.Archive and gateway.Lister.
package memarchive
