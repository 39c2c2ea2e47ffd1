package access

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// File is a node's own rules file: one JSON Rule a line ("#" lines and
// blank lines ignored). It feeds a Table's Local source, is reloaded when
// it changes on disk (Watch), and is rewritten whole, atomically, by Add
// and Remove (the admin API's `herod access add|remove`).
type File struct {
	path  string
	table *Table
	log   *slog.Logger

	mu    sync.Mutex
	stamp fileStamp // of the version last loaded
	rules []Rule
}

type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

// OpenFile loads path (a missing file holds no rules) into table's Local
// source. A malformed line is an error: nothing is loaded.
func OpenFile(path string, table *Table, log *slog.Logger) (*File, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &File{path: path, table: table, log: log}
	if err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Reload reads the file again if it changed since the last load. A file
// that does not parse leaves the rules in force as they were.
func (f *File) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloadLocked()
}

func (f *File) reloadLocked() error {
	st := statOf(f.path)
	if st == f.stamp && f.rules != nil {
		return nil
	}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		b, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("access rules: %w", err)
	}
	rules, err := Parse(b)
	if err != nil {
		return fmt.Errorf("access rules %s: %w", f.path, err)
	}
	f.table.Replace(Local, rules)
	f.rules, f.stamp = rules, st
	f.log.Info("access rules loaded", "file", f.path, "rules", len(rules))
	return nil
}

func statOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// Parse reads rules, one JSON object a line; every rule must validate.
func Parse(b []byte) ([]Rule, error) {
	rules := []Rule{}
	for i, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		var r Rule
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// Watch reloads the file every interval until ctx ends, logging a file
// that does not parse once per change.
func (f *File) Watch(ctx context.Context, interval time.Duration) {
	tk := time.NewTicker(interval)
	defer tk.Stop()
	var lastBad fileStamp
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		if err := f.Reload(); err != nil {
			if st := statOf(f.path); st != lastBad {
				lastBad = st
				f.log.Warn("access rules not reloaded", "err", err)
			}
		}
	}
}

// Rules returns the file's rules as last loaded.
func (f *File) Rules() []Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rules)
}

// Add adds r (replacing a rule of the same ID) and writes the file.
func (f *File) Add(r Rule) error {
	if err := r.Validate(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.reloadLocked(); err != nil {
		return err
	}
	id := r.ID()
	rules := slices.DeleteFunc(slices.Clone(f.rules), func(x Rule) bool { return x.ID() == id })
	return f.writeLocked(append(rules, r))
}

// Remove removes the rules whose ID is idOrURL, or, when none has that
// ID, every rule whose key is that URL's or SURT prefix's; it returns
// how many it removed.
func (f *File) Remove(idOrURL string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.reloadLocked(); err != nil {
		return 0, err
	}
	match := func(x Rule) bool { return x.ID() == idOrURL }
	if !slices.ContainsFunc(f.rules, match) {
		key, err := SURT(idOrURL)
		if err != nil {
			key = idOrURL
		}
		match = func(x Rule) bool { k, _ := x.Key(); return k == key || x.URL == idOrURL || x.SURT == idOrURL }
	}
	rules := slices.DeleteFunc(slices.Clone(f.rules), match)
	n := len(f.rules) - len(rules)
	if n == 0 {
		return 0, nil
	}
	return n, f.writeLocked(rules)
}

// writeLocked writes rules to the file (a temporary file synced and
// renamed over it) and makes them current.
func (f *File) writeLocked(rules []Rule) error {
	var buf bytes.Buffer
	buf.WriteString("# herod access rules: one JSON rule a line (docs/access.md)\n")
	for _, r := range rules {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("access rules: %w", err)
		}
		buf.Write(append(b, '\n'))
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".access-rules-*")
	if err != nil {
		return fmt.Errorf("access rules: %w", err)
	}
	_, err = tmp.Write(buf.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("access rules: write %s: %w", f.path, err)
	}
	f.table.Replace(Local, rules)
	f.rules, f.stamp = rules, statOf(f.path)
	return nil
}
