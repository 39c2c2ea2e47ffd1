package archive

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Disk full. A write that fails half-way fails the store for good
// (segment.go: nothing built on a lost write may be acknowledged), and a
// file system that runs out of space fails writes half-way. So the store
// keeps a reserve: before a record is written it checks the free space of
// its file system (statfs, read at most every diskCheckEvery), and a
// write that would leave less than Options.DiskReserve returns ErrDiskFull
// having written nothing; the store stays healthy, and writes succeed
// again as soon as space returns. Crawl-state and check writes (SetState,
// Touch) are refused the same way. DiskFull tells the crawler and
// replication to pause. Only a file system that another program fills to
// the last byte between two checks can still fail the store.

// DefaultDiskReserve is the free space a store keeps on its file system
// when Options.DiskReserve is zero.
const DefaultDiskReserve = 64 << 20

// diskCheckEvery bounds how often the store reads its file system's free
// space.
const diskCheckEvery = 500 * time.Millisecond

// ErrDiskFull reports a write refused because the store's file system is
// at its reserve: nothing was written, and the same write may succeed
// once space returns.
var ErrDiskFull = errors.New("archive: disk full")

// diskGuard tracks the free space of a store's file system.
type diskGuard struct {
	reserve int64                           // bytes to keep free; <= 0: no check
	free    func(dir string) (int64, error) // statfs by default; tests inject
	dir     string

	mu      sync.Mutex
	checked time.Time
	last    int64 // free bytes at checked
	since   int64 // bytes admitted since checked
	needed  int64 // the size of the last write refused, until one is admitted
	full    atomic.Bool
	refused atomic.Int64
	logged  atomic.Bool
}

// statfsFree returns the bytes an unprivileged writer may still use on
// dir's file system.
func statfsFree(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// freeLocked returns the free bytes: the last reading less what was
// admitted since, read again when that reading is older than
// diskCheckEvery or when fresh is set. The caller holds g.mu.
func (g *diskGuard) freeLocked(fresh bool) (int64, error) {
	if !fresh && time.Since(g.checked) < diskCheckEvery {
		return g.last - g.since, nil
	}
	n, err := g.free(g.dir)
	if err != nil {
		return 0, err
	}
	g.checked, g.last, g.since = time.Now(), n, 0
	return n, nil
}

// admit checks that size more bytes leave the reserve free, counting
// them as written; it returns ErrDiskFull otherwise. A write that the
// estimate refuses is checked against a fresh reading before it is
// refused. A failed statfs admits the write (its own error will tell).
func (g *diskGuard) admit(size int64) error {
	if g.reserve <= 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n, err := g.freeLocked(false)
	if err == nil && n-size < g.reserve {
		n, err = g.freeLocked(true)
	}
	if err != nil {
		return nil
	}
	if n-size < g.reserve {
		g.full.Store(true)
		g.needed = size
		g.refused.Add(1)
		return fmt.Errorf("%w: %d bytes free, %d reserved", ErrDiskFull, n, g.reserve)
	}
	g.since += size
	g.needed = 0
	g.full.Store(false)
	return nil
}

// isFull reports whether the file system is at the reserve now, or has
// no room for the last write refused.
func (g *diskGuard) isFull() bool {
	if g.reserve <= 0 {
		return false
	}
	g.mu.Lock()
	n, err := g.freeLocked(false)
	n -= g.needed
	g.mu.Unlock()
	if err != nil {
		return false
	}
	full := n < g.reserve
	g.full.Store(full)
	return full
}

// DiskFull reports whether the store's file system has no more room than
// its reserve (Options.DiskReserve), or not enough beyond it for the last
// write refused: writes are refused with ErrDiskFull until space returns.
// It reads the free space at most every half second.
func (s *Store) DiskFull() bool {
	full := s.disk.isFull()
	if full && !s.disk.logged.Swap(true) {
		s.log.Warn("disk full: writes paused until space returns", "dir", s.dir, "reserve", s.disk.reserve)
	} else if !full && s.disk.logged.Swap(false) {
		s.log.Info("disk space back: writes resume", "dir", s.dir)
	}
	return full
}
