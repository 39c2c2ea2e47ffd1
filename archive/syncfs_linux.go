//go:build linux

package archive

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// groupFileSync reports whether new version files are made durable a
// group at a time (one syncfs for the files of an index group) instead
// of one fsync each.
const groupFileSync = true

// syncFilesystem flushes every dirty file of the filesystem holding dir
// (syncfs(2); it reports writeback errors since Linux 5.8).
func syncFilesystem(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
