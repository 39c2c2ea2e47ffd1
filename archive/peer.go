package archive

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// peerTable interns the signing peers of versions: a version's index value
// holds a small number instead of a ~52-byte libp2p peer id. Numbers are
// given out from 1 (0 is "unsigned") under Store.mu, and the 'p' entry of a
// new number goes into the same index batch as the first version that
// uses it; a failed batch fails the store (commit.go), so a number is
// never used by a committed version without its entry.
type peerTable struct {
	mu    sync.RWMutex
	names []string // names[n-1] is peer n
	nums  map[string]uint64
}

func peerKey(n uint64) []byte {
	return binary.BigEndian.AppendUint32([]byte{pPeer}, uint32(n))
}

// load reads the table from an index.
func (p *peerTable) load(db *leveldb.DB) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names, p.nums = nil, make(map[string]uint64)
	it := db.NewIterator(util.BytesPrefix([]byte{pPeer}), nil)
	defer it.Release()
	for it.Next() {
		k := it.Key()
		if len(k) != 5 {
			return fmt.Errorf("%w: %w: peer key", ErrCorrupt, errBadValue)
		}
		n := uint64(binary.BigEndian.Uint32(k[1:]))
		if n != uint64(len(p.names))+1 {
			return fmt.Errorf("%w: peer numbers not dense at %d", ErrCorrupt, n)
		}
		p.names = append(p.names, string(it.Value()))
		p.nums[string(it.Value())] = n
	}
	return it.Error()
}

// name returns the peer numbered n, "" for 0 or an unknown number.
func (p *peerTable) name(n uint64) string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if n == 0 || n > uint64(len(p.names)) {
		return ""
	}
	return p.names[n-1]
}

// number returns peer's number, 0 for "". A peer seen for the first time
// gets the next number, and its entry is put in b.
func (p *peerTable) number(peer string, b *leveldb.Batch) uint64 {
	if peer == "" {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n, ok := p.nums[peer]; ok {
		return n
	}
	p.names = append(p.names, peer)
	n := uint64(len(p.names))
	p.nums[peer] = n
	b.Put(peerKey(n), []byte(peer))
	return n
}

// lookup returns peer's number without adding it.
func (p *peerTable) lookup(peer string) (uint64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n, ok := p.nums[peer]
	return n, ok
}
