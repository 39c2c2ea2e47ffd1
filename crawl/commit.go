package crawl

import (
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// Group commit. Add must not return before its URLs are on disk, but an
// fsync per Add (one per fetched page in a small ring) would cap the crawl
// at the disk's sync rate. So adds hand their writes to one committer
// goroutine and wait: the writes that arrive while one group is being
// synced form the next group, written and synced at once.

// group is one group commit: the writes of the adds that arrived while
// the previous group was being synced.
type group struct {
	b    leveldb.Batch
	done chan struct{}
	err  error
}

// commit appends kvs (key, value pairs) to the current group and waits
// until the group is written and synced.
func (q *queue) commit(kvs [][2][]byte) error {
	q.gmu.Lock()
	if q.closing {
		q.gmu.Unlock()
		return ErrClosed
	}
	if q.cur == nil {
		q.cur = &group{done: make(chan struct{})}
		q.gcond.Signal()
	}
	g := q.cur
	for _, kv := range kvs {
		g.b.Put(kv[0], kv[1])
	}
	q.gmu.Unlock()
	<-g.done
	return g.err
}

// committer writes groups, one synced write each, until close. A group
// forms while the previous one is being synced, so concurrent adds share
// one fsync.
func (q *queue) committer() {
	defer close(q.stopped)
	for {
		q.gmu.Lock()
		for q.cur == nil && !q.closing {
			q.gcond.Wait()
		}
		g := q.cur
		q.cur = nil
		q.gmu.Unlock()
		if g == nil {
			return // closing, nothing left
		}
		g.err = q.db.Write(&g.b, &opt.WriteOptions{Sync: true})
		close(g.done)
	}
}
