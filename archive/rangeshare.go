package archive

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Fair shares per replicated range. A node replicates the ranges of a
// few owners (its predecessors on the ring). Besides the share of each
// signer (share.go), the versions of any one replicated range may take
// at most RangeShare of the quota (Options.RangeShare, half by default),
// whoever signed them: a range whose versions several members fetched
// (after a take-over, or by one operator's several identities) cannot
// take the whole quota either. The node tells the store which ranges it
// replicates (SetRanges); a write of a version in one of them, not
// fetched by the store's own signer, past that range's share returns
// ErrQuota wrapping ErrRangeShare, having written nothing.

// DefaultRangeShare is Options.RangeShare's default.
const DefaultRangeShare = 0.5

// ErrRangeShare reports a version refused because the versions of its
// replicated range already take their share of the quota.
var ErrRangeShare = errors.New("archive: the range's share of the quota is used")

// KeyRange is the arc (A, B] of the ring's key space: the keys after A up
// to B, wrapping past the largest key when B < A (A == B, the whole
// ring, is refused by SetRanges).
type KeyRange struct {
	A, B id.ID
}

// Contains reports whether key k lies in (A, B].
func (r KeyRange) Contains(k id.ID) bool {
	if r.A.Cmp(r.B) < 0 {
		return r.A.Cmp(k) < 0 && k.Cmp(r.B) <= 0
	}
	return r.A.Cmp(k) < 0 || k.Cmp(r.B) <= 0
}

// rangeShares is the per-range accounting of a store with a quota; every
// field is guarded by Store.mu.
type rangeShares struct {
	ranges  []KeyRange
	bytes   []int64 // of stored versions, by range
	pending []int64 // reserved, not yet indexed, by range
}

// index returns the range holding key, -1 for none.
func (rs *rangeShares) index(k id.ID) int {
	for i, r := range rs.ranges {
		if r.Contains(k) {
			return i
		}
	}
	return -1
}

// rangeCap is the bytes the versions of one replicated range may take: 0
// for no bound.
func (s *Store) rangeCap() int64 {
	if s.quota <= 0 || s.rangeShare >= 1 {
		return 0
	}
	return int64(float64(s.quota) * s.rangeShare)
}

// SetRanges tells the store the ranges its node replicates for other
// owners (at most 1024, none the whole ring). It counts the bytes the
// store holds in each by reading the index, so it is called when the set
// changes, not for every version; a write under way meanwhile may be
// missed from the count until the next call. Without a quota it only
// checks rs.
func (s *Store) SetRanges(rs []KeyRange) error {
	if len(rs) > 1024 {
		return fmt.Errorf("archive set ranges: %d ranges, at most 1024", len(rs))
	}
	for _, r := range rs {
		if r.A == r.B {
			return fmt.Errorf("archive set ranges: (%s, %s] is the whole ring", r.A.Short(), r.B.Short())
		}
	}
	s.mu.Lock()
	same := slices.Equal(s.rshare.ranges, rs)
	s.mu.Unlock()
	if same {
		return nil
	}
	bytes := make([]int64, len(rs))
	for i, r := range rs {
		if s.rangeCap() == 0 {
			break
		}
		n, err := s.keyRangeBytes(r)
		if err != nil {
			return fmt.Errorf("archive set ranges: %w", err)
		}
		bytes[i] = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rshare.ranges, s.rshare.bytes, s.rshare.pending = slices.Clone(rs), bytes, make([]int64, len(rs))
	return nil
}

// keyRangeBytes sums the record sizes of the versions whose key lies in r.
func (s *Store) keyRangeBytes(r KeyRange) (int64, error) {
	after := func(k id.ID) []byte { // a bound past every version key of key k
		b := append([]byte{pVersion}, k[:]...)
		return append(b, bytes.Repeat([]byte{0xff}, versionKeyLen-len(b))...)
	}
	spans := []util.Range{{Start: after(r.A), Limit: after(r.B)}}
	if r.A.Cmp(r.B) >= 0 { // wraps: (A, max] and [0, B]
		spans = []util.Range{{Start: after(r.A), Limit: []byte{pVersion + 1}}, {Start: []byte{pVersion}, Limit: after(r.B)}}
	}
	var n int64
	for _, sp := range spans {
		it := s.db.NewIterator(&sp, nil)
		for it.Next() {
			sv, err := decodeStored(it.Key(), it.Value())
			if err != nil {
				it.Release()
				return 0, err
			}
			n += sv.Size
		}
		it.Release()
		if err := it.Error(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// checkRangeLocked returns ErrQuota wrapping ErrRangeShare when size more
// bytes of key, signed by peer, pass its replicated range's share. The
// caller holds s.mu.
func (s *Store) checkRangeLocked(key id.ID, peer string, size int64) error {
	c := s.rangeCap()
	if c == 0 || (s.signer != nil && peer == s.signer.Peer()) {
		return nil
	}
	i := s.rshare.index(key)
	if i < 0 || s.rshare.bytes[i]+s.rshare.pending[i]+size <= c {
		return nil
	}
	s.rangeRefused.Add(1)
	r := s.rshare.ranges[i]
	return fmt.Errorf("%w: %w: (%s, %s] holds %d bytes of %d", ErrQuota, ErrRangeShare, r.A.Short(), r.B.Short(), s.rshare.bytes[i], c)
}

// addRangeLocked adds n bytes of key to its range's count: to the
// pending bytes, or to the stored ones. The caller holds s.mu.
func (s *Store) addRangeLocked(key id.ID, n int64, pending bool) {
	if s.rangeCap() == 0 {
		return
	}
	i := s.rshare.index(key)
	switch {
	case i < 0:
	case pending:
		s.rshare.pending[i] = max(0, s.rshare.pending[i]+n)
	default:
		s.rshare.bytes[i] = max(0, s.rshare.bytes[i]+n)
	}
}

// RangeBytes returns the bytes of stored versions the store counts in each
// of the ranges of the last SetRanges, in its order (with a Quota only).
func (s *Store) RangeBytes() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rshare.bytes)
}
