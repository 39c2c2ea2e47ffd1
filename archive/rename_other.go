//go:build !unix

package archive

import "os"

// renameFile renames the file oldpath to newpath, replacing any file
// there.
func renameFile(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
