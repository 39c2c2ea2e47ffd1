package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// ReadFile returns the bytes of the version file e, verified as Read
// verifies them, for sending to a replica. It returns ErrNotFound if the
// file is absent.
func (s *Store) ReadFile(ctx context.Context, e Entry) ([]byte, error) {
	data, _, err := s.readVerified(ctx, e)
	return data, err
}

// readVerified reads the file of e and verifies it against its name.
func (s *Store) readVerified(ctx context.Context, e Entry) ([]byte, *decodedFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("archive read file: %w", err)
	}
	data, err := s.readRaw(e.Path())
	if err != nil {
		return nil, nil, fmt.Errorf("archive read file %s: %w", e.Name(), err)
	}
	f, err := decodeMember(data)
	if err == nil {
		err = checkEntry(e, f, "")
	}
	if err != nil {
		s.corrupt.Add(1)
		s.log.Error("corrupt version file", "file", e.Path(), "err", err)
		return nil, nil, fmt.Errorf("archive read file %s: %w", e.Name(), err)
	}
	return data, f, nil
}

// Import stores a version file received from a replica under its own
// name, after verifying it: one gzip member, one WARC response record,
// digests, and a name that matches its URL, payload and day (so replicas
// must share the day length), a capture time not in the future, and,
// with Options.Verifier, its fetcher's signature (provenance.go). It does not deduplicate against the newest
// version: replicas hold exactly the files their peers hold. It returns
// added == false if the file is already stored and indexed, ErrCorrupt for
// a file that fails verification, ErrQuota when the quota is reached.
func (s *Store) Import(ctx context.Context, name string, data []byte) (Version, bool, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	if s.closed.Load() {
		return Version{}, false, errors.New("archive import: store closed")
	}
	e, err := ParseName(name)
	if err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	f, err := decodeMember(data)
	if err == nil {
		err = checkEntry(e, f, "")
	}
	if err == nil && s.DayOf(f.capture.Time) != e.Day {
		err = fmt.Errorf("%w: day %d in name, %d from WARC-Date (day lengths differ?)",
			ErrCorrupt, e.Day, s.DayOf(f.capture.Time))
	}
	if err == nil {
		err = s.checkProvenance(f)
	}
	if err != nil {
		return Version{}, false, fmt.Errorf("archive import %s: %w", name, err)
	}
	c := &f.capture
	v := Version{
		URL: c.URL, Key: e.Key, Digest: e.Digest, Day: e.Day, Time: c.Time, Status: c.Status,
		ContentType: contentType(c.Header.Get("Content-Type")),
		Length:      int64(len(c.Body)), File: e.Path(),
	}
	lk := &s.keyLocks[e.Key[len(e.Key)-1]]
	lk.Lock()
	defer lk.Unlock()
	if have, err := s.versionAt(v.Key, v.Time, v.Digest); err == nil {
		return have, false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	_, err = s.newest(e.Key)
	first := errors.Is(err, ErrNotFound)
	if err != nil && !first {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	size := int64(len(data))
	giveUp, indexed := s.beginWrite(), false
	defer func() {
		if !indexed {
			giveUp()
		}
	}()
	if err := s.reserve(size); err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	var mv *pendingFile
	if _, err := s.ensureDir(e.Path()); err != nil {
		s.unreserve(size)
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	deferred := f.deferred
	if old, err := s.readRaw(e.Path()); err == nil {
		// An unindexed file left by a crash: index it if it holds this
		// record, however compressed (one of them may be deferred).
		of, same := f, bytes.Equal(old, data)
		if !same {
			of, same = sameRecord(old, data)
		}
		if !same {
			s.unreserve(size)
			return Version{}, false, fmt.Errorf("archive import: unindexed file %s differs; run reindex", name)
		}
		deferred = of.deferred
		s.mu.Lock()
		s.pending += int64(len(old)) - size // the file kept is the one indexed
		s.mu.Unlock()
		size = int64(len(old))
	} else if mv, err = s.placeFile(e.Path(), data); err != nil {
		s.unreserve(size)
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	indexed = true // index ends the write, whatever it returns
	if err := s.index(v, e, size, first, deferred, mv, nil); err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	return v, true, nil
}

// sameRecord reports whether the version files a and b hold the same
// verified record, and returns a's decoding.
func sameRecord(a, b []byte) (*decodedFile, bool) {
	var ra, rb bytes.Buffer
	fa, err := decodeMemberTo(a, &ra)
	if err != nil {
		return nil, false
	}
	if _, err := decodeMemberTo(b, &rb); err != nil {
		return nil, false
	}
	return fa, bytes.Equal(ra.Bytes(), rb.Bytes())
}
