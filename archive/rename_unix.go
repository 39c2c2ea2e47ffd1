//go:build unix

package archive

import (
	"errors"
	"os"
	"syscall"
)

// renameFile renames the file oldpath to newpath, replacing any file
// there, with one rename(2). os.Rename first stats newpath to refuse
// replacing a directory (one more system call per version file, ~13 µs in
// scripts/bench-crawl.sh's CPU profile); newpath here is always a version
// file's name, so a directory there would be a corrupt store, and rename(2)
// refuses to replace a directory with a file anyway (EISDIR).
func renameFile(oldpath, newpath string) error {
	for {
		err := syscall.Rename(oldpath, newpath)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
			}
			return nil
		}
	}
}
