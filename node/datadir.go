package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrDataDirInUse reports a data directory another herod (a running node,
// an offline export, fsck or purge) holds.
var ErrDataDirInUse = errors.New("node: data directory in use")

// LockFile is the file in a data directory a running node holds an
// exclusive flock(2) on; the kernel releases it when the process ends,
// kill -9 included, so no stale lock is ever left behind.
const LockFile = "lock"

// lockDataDir takes the data directory's lock, or returns an error that
// wraps ErrDataDirInUse and asks whether another herod uses it.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node: data dir lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked: is another herod using %s?", ErrDataDirInUse, dir, dir)
		}
		return nil, fmt.Errorf("node: data dir lock: %w", err)
	}
	return f, nil
}

// LockDataDir takes the lock of the data directory dir for an offline
// command (export --data, fsck, purge --offline), so that no node starts
// on it meanwhile; an error wraps ErrDataDirInUse when a node (or another
// offline command) holds it. Close the file to release it.
func LockDataDir(dir string) (*os.File, error) { return lockDataDir(dir) }
