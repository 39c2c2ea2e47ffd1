package archive

import (
	"io"
	"os"
	"path/filepath"

	"github.com/herod-archive/herod/internal/atomicfile"
)

// fileSystem is the file-system layer that segments and their directory
// go through: the operating system's in production, a fault-injecting one
// in tests (faultfs_test.go), which fails syncs and writes or "crashes"
// between any two of them.
type fileSystem interface {
	// OpenFile opens a segment file (os.OpenFile's contract).
	OpenFile(name string, flag int, perm os.FileMode) (segFile, error)
	// SyncDir makes the entries of dir (files created, renamed or
	// removed in it) durable.
	SyncDir(dir string) error
	// Remove removes a file.
	Remove(name string) error
	// Rename renames a file (os.Rename's contract).
	Rename(from, to string) error
}

// segFile is what the store does with a segment file.
type segFile interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}

// osFS is the operating system's file system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (segFile, error) {
	return os.OpenFile(name, flag, perm)
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) SyncDir(dir string) error { return syncDir(dir) }

func (osFS) Rename(from, to string) error { return os.Rename(from, to) }

// syncDir fsyncs a directory (atomicfile.SyncDir).
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

// appendSynced appends line to dir's file name, creating it if needed,
// and syncs it (and dir when it created the file).
func appendSynced(dir, name string, line []byte) error {
	path := filepath.Join(dir, name)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if statErr != nil {
		return syncDir(dir)
	}
	return nil
}
