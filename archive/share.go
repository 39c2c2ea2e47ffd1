package archive

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb/util"
)

// Fair shares of the quota. A replica stores what other members fetched
// and signed; without a bound, one member could fill its replicas' quota
// with junk, and the replicas would then refuse their own fetches and
// every honest member's versions. With a Quota, the versions signed by
// any one peer other than the store's own signer may take at most
// SignerShare of it (Options.SignerShare, half by default): a write past
// that returns ErrQuota wrapping ErrSignerShare, having written nothing.
// The store's own fetches are bounded by the quota alone.

// DefaultSignerShare is Options.SignerShare's default.
const DefaultSignerShare = 0.5

// ErrSignerShare reports a version refused because its signer's versions
// already take their share of the quota.
var ErrSignerShare = errors.New("archive: the signer's share of the quota is used")

// loadShares counts the bytes of the versions each signer holds in the
// index (a store with a quota only). The caller holds no lock: Open.
func (s *Store) loadShares() error {
	s.signerBytes = map[string]int64{}
	if s.quota <= 0 {
		return nil
	}
	it := s.db.NewIterator(util.BytesPrefix([]byte{pVersion}), nil)
	defer it.Release()
	for it.Next() {
		sv, err := decodeStored(it.Key(), it.Value())
		if err != nil {
			return err
		}
		if p := s.peers.name(sv.peer); p != "" {
			s.signerBytes[p] += sv.Size
		}
	}
	return it.Error()
}

// shareCap is the bytes the versions of peer may take: 0 for no bound.
func (s *Store) shareCap(peer string) int64 {
	if s.quota <= 0 || peer == "" || (s.signer != nil && peer == s.signer.Peer()) || s.signerShare >= 1 {
		return 0
	}
	return int64(float64(s.quota) * s.signerShare)
}

// checkShareLocked returns ErrQuota wrapping ErrSignerShare when size
// more bytes signed by peer pass its share. The caller holds s.mu.
func (s *Store) checkShareLocked(peer string, size int64) error {
	c := s.shareCap(peer)
	if c == 0 || s.signerBytes[peer]+s.signerPending[peer]+size <= c {
		return nil
	}
	s.shareRefused.Add(1)
	return fmt.Errorf("%w: %w: %s holds %d bytes of %d", ErrQuota, ErrSignerShare, peer, s.signerBytes[peer], c)
}

// SignerBytes returns the bytes of the versions peer signed that the
// store holds (counted with a Quota only).
func (s *Store) SignerBytes(peer string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signerBytes[peer]
}

// AtQuota reports whether the store is so close to its quota that it
// would refuse most versions: less than 1 MiB, or 1% of the quota, left.
// Its node pauses the crawl and replication meanwhile rather than fetch
// or download what it would refuse; a purge or a larger quota ends it.
func (s *Store) AtQuota() bool {
	if s.quota <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quota-(s.ctr.bytes+s.pending) < min(1<<20, s.quota/100)
}
