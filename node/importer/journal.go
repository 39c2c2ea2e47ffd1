package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// journal is how far the import of one source file got: the records
// read, in file order, whose fate is settled (stored by their owners,
// held already, skipped, or reported). It is saved after every batch,
// synced and renamed into place, so an import killed at any moment
// resumes after the last settled batch; the records of the batch it was
// sending are sent again, and their owners, holding them already, store
// nothing (archive.Store.AddImported).
type journal struct {
	Done     int  `json:"done"`
	Complete bool `json:"complete,omitempty"`
	path     string
}

// openJournal loads the journal of the file with SHA-256 sum in dir, an
// empty one if there is none.
func openJournal(dir, sum string) (*journal, error) {
	j := &journal{path: filepath.Join(dir, sum+".json")}
	b, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := json.Unmarshal(b, j); err != nil || j.Done < 0 {
		return nil, fmt.Errorf("journal %s: damaged (remove it to import the file from its start): %v", j.path, err)
	}
	return j, nil
}

// save writes j durably.
func (j *journal) save() error {
	if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	b, _ := json.Marshal(j)
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(filepath.Dir(j.path)); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}
