// Package identity signs and verifies with libp2p identity keys: a node
// signs every version it fetches, and every purge order it issues, with
// the key behind its peer id (Signer); anyone verifies a signature from
// the peer id alone, since Ed25519 ids embed the public key (Verifier),
// so no key directory is needed. See archive/provenance.go for what a
// signature proves.
//
// It also keeps who a node is across restarts, in its data directory
// (datadir.go): its private key (KeyFile: LoadKey creates it on first
// use, DataDirSigner only reads it) and the virtual-server indexes it
// chose on the ring (IndexesFile: LoadIndexes, SaveIndexes). Both files
// are written atomically, through a synced temporary file and a rename.
//
// Signer and Verifier are values safe for concurrent use.
package identity
