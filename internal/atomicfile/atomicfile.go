package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with b (mode mode): b is written to a temporary
// file beside path, synced, and renamed over path; the directory is then
// synced so that the rename survives a power loss. On an error path is
// unchanged and the temporary file removed.
func Write(path string, b []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	return nil
}

// Remove removes path, if it exists, and syncs its directory, so that a
// file removed stays removed after a power loss.
func Remove(path string) error {
	if err := os.Remove(path); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("atomic remove: %w", err)
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("atomic remove %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs a directory, making the creation, rename or removal of
// its entries durable (POSIX requires it; ext4's data=ordered merely
// happens to order them).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
