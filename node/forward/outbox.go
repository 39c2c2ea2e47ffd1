package forward

import (
	"encoding/binary"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/herod-archive/herod/internal/id"
)

// Outbox is the forwarder's buffer on disk: every link waiting for its
// owner's acknowledgement, so that a node killed mid-walk forwards the links
// again when it restarts. Without it a crash would lose links for good: the
// page they came from is already marked as crawled, and tomorrow it will be
// unchanged, so its links would never be sent again.
//
// Records are key(20) ‖ url → uvarint hops, then 1 for a page requisite
// (nothing for a plain link). Writes are not fsynced: goleveldb
// writes its log before returning, so a killed process loses nothing; only a
// machine crash can lose the last moments, as for the crawl queue.
type Outbox struct {
	db *leveldb.DB
}

// OpenOutbox opens (or creates) the outbox in dir.
func OpenOutbox(dir string) (*Outbox, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{DisableSeeksCompaction: true})
	if err != nil {
		return nil, fmt.Errorf("outbox %s: %w", dir, err)
	}
	return &Outbox{db: db}, nil
}

func outboxKey(l pendingLink) []byte {
	k := make([]byte, 0, id.Size+len(l.url))
	k = append(k, l.key[:]...)
	return append(k, l.url...)
}

func (o *Outbox) add(links []pendingLink) error {
	var b leveldb.Batch
	var v [binary.MaxVarintLen64]byte
	for _, l := range links {
		n := binary.PutUvarint(v[:], uint64(l.hops))
		val := v[:n]
		if l.req {
			val = append(val, 1)
		}
		b.Put(outboxKey(l), val)
	}
	if err := o.db.Write(&b, nil); err != nil {
		return fmt.Errorf("outbox add: %w", err)
	}
	return nil
}

func (o *Outbox) remove(links []pendingLink) error {
	var b leveldb.Batch
	for _, l := range links {
		b.Delete(outboxKey(l))
	}
	if err := o.db.Write(&b, nil); err != nil {
		return fmt.Errorf("outbox remove: %w", err)
	}
	return nil
}

// load returns every link in the outbox. Records that do not parse are
// skipped and reported in the error count of the caller's log.
func (o *Outbox) load() ([]pendingLink, error) {
	it := o.db.NewIterator(nil, nil)
	defer it.Release()
	var out []pendingLink
	for it.Next() {
		k := it.Key()
		if len(k) <= id.Size {
			continue
		}
		val := it.Value()
		hops, n := binary.Uvarint(val)
		if n <= 0 {
			hops, n = 0, 0
		}
		req := n < len(val) && val[n] == 1
		var key id.ID
		copy(key[:], k[:id.Size])
		u := string(k[id.Size:])
		if id.OfString(u) != key {
			continue // not written by us: never forward a link under a wrong key
		}
		out = append(out, pendingLink{url: u, key: key, hops: int(hops), req: req})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("outbox load: %w", err)
	}
	return out, nil
}

// Close closes the outbox's database.
func (o *Outbox) Close() error { return o.db.Close() }
