//go:build !linux

package archive

import "errors"

// groupFileSync is false where syncfs(2) is missing: each version file is
// fsynced on its own before its rename.
const groupFileSync = false

func syncFilesystem(string) error { return errors.New("syncfs: not supported on this system") }
