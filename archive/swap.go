package archive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Index swap. Reindex builds a new index beside the live one and swaps it
// in with renames, each made durable by an fsync of the store directory,
// so that a crash at any step leaves a state recoverSwap completes:
//
//  1. build dir/index.new                 (crash: index.new is removed)
//  2. rename index.new -> index.ready     (the new index is complete)
//  3. rename index -> index.old           (crash: ready is moved in)
//  4. rename index.ready -> index
//  5. remove index.old                    (crash: it is removed again)
//
// The old index, with the crawl states and checks no segment records, is
// never deleted before the new one, which holds copies of them, is in
// place.
const (
	indexNew   = "index.new"
	indexReady = "index.ready"
	indexOld   = "index.old"
)

// swapIndex puts the complete index built in dir/index.new in place of
// dir/index (steps 2-5).
func swapIndex(dir string) error {
	p := func(name string) string { return filepath.Join(dir, name) }
	if err := syncTree(p(indexNew)); err != nil {
		return fmt.Errorf("swap index: %w", err)
	}
	if err := renameSynced(dir, indexNew, indexReady); err != nil {
		return fmt.Errorf("swap index: %w", err)
	}
	return recoverSwap(dir)
}

// recoverSwap completes or undoes an index swap a crash interrupted; with
// no swap under way it does nothing.
func recoverSwap(dir string) error {
	p := func(name string) string { return filepath.Join(dir, name) }
	if exists(p(indexNew)) {
		if err := os.RemoveAll(p(indexNew)); err != nil {
			return fmt.Errorf("remove incomplete index: %w", err)
		}
	}
	if exists(p(indexReady)) {
		if exists(p(indexOld)) && exists(p("index")) {
			return fmt.Errorf("index swap: %s, %s and index all exist; resolve by hand", indexReady, indexOld)
		}
		if exists(p("index")) {
			if err := renameSynced(dir, "index", indexOld); err != nil {
				return fmt.Errorf("index swap: %w", err)
			}
		}
		if err := renameSynced(dir, indexReady, "index"); err != nil {
			return fmt.Errorf("index swap: %w", err)
		}
	}
	if exists(p(indexOld)) {
		if !exists(p("index")) {
			// Cannot happen by the steps above; keep what there is.
			return renameSynced(dir, indexOld, "index")
		}
		if err := os.RemoveAll(p(indexOld)); err != nil {
			return fmt.Errorf("remove old index: %w", err)
		}
		if err := syncDir(dir); err != nil {
			return fmt.Errorf("remove old index: %w", err)
		}
	}
	return nil
}

// renameSynced renames dir/from to dir/to and fsyncs dir.
func renameSynced(dir, from, to string) error {
	if err := swapRename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
		return err
	}
	return syncDir(dir)
}

// swapRename is os.Rename; a variable so that tests can crash between
// the steps.
var swapRename = os.Rename

// syncTree fsyncs every file of a directory and the directory.
func syncTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return syncDir(dir)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}
