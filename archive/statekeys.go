package archive

import (
	"fmt"
	"log/slog"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// moveStatesBatch is how many crawl states moveStates moves in one write.
const moveStatesBatch = 4096

// moveStates moves the crawl states an index keeps under their URL's
// hash (stateKey, before crawlStateKey) to their keys in host order, each
// batch putting the new keys and deleting the old in one write, so that
// a crash between batches leaves every state under one of its keys and
// the next open moves the rest. The record, which names its URL, is
// moved as it is; one that cannot be read is dropped and counted: the
// crawler then derives the state from the URL's newest version, as for
// any URL without one. Called at open, before anything else writes.
func moveStates(db *leveldb.DB, log *slog.Logger) error {
	// One iterator, on the snapshot it takes: the batches written
	// meanwhile only delete what it already read.
	it := db.NewIterator(util.BytesPrefix([]byte{pState}), nil)
	defer it.Release()
	moved, dropped := 0, 0
	var b leveldb.Batch
	write := func() error {
		if b.Len() == 0 {
			return nil
		}
		err := db.Write(&b, &opt.WriteOptions{Sync: true})
		b.Reset()
		return err
	}
	for it.Next() {
		b.Delete(it.Key())
		if rec, err := decodeState(it.Value()); err != nil || rec.URL == "" {
			dropped++
		} else {
			b.Put(crawlStateKey(rec.URL), it.Value())
			moved++
		}
		if b.Len() >= 2*moveStatesBatch {
			if err := write(); err != nil {
				return fmt.Errorf("archive: move crawl states: %w", err)
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("archive: move crawl states: %w", err)
	}
	if err := write(); err != nil {
		return fmt.Errorf("archive: move crawl states: %w", err)
	}
	if moved+dropped > 0 {
		log.Info("archive: crawl states moved to host order", "moved", moved, "unreadableDropped", dropped)
	}
	return nil
}
