package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/herod-archive/herod/internal/id"
)

// Dictionaries. A store knows the dictionary of every .warc.zst segment it
// holds (each segment starts with its dictionary's frame, so the
// segments are where dictionaries are kept): its own, which compresses
// the records it writes, and those of the peers whose records it keeps
// as they were sent (replica.go). Peers name a dictionary by a DictRef:
// the id its frames carry and the SHA-1 of its bytes, so that two
// dictionaries that happen to share an id (ids are random 31-bit numbers)
// are never confused, and a dictionary fetched from a peer is verified
// against the name it was asked for.
//
// The store's own dictionary is also written to the file ownDictFile
// (synced, through a rename) before the first record uses it, so that
// Open tells it from the peers' ones; an empty file says the store has
// none yet. A store from before that file has only its own dictionary in
// its segments: Open takes the newest one's and writes the file.

// ownDictFile is the file, in the store's root, holding the store's own
// dictionary (empty: none yet).
const ownDictFile = "dictionary"

// MaxDictSize bounds a dictionary a store accepts from a peer.
const MaxDictSize = 4 * maxDictBytes

// maxPendingDicts bounds the peers' dictionaries a store holds in memory
// that no segment holds yet (fetched for a record that has not been
// stored): a peer naming ever new dictionaries evicts its own earlier
// ones, not the store's.
const maxPendingDicts = 16

// DictRef names a zstd dictionary: the id its frames carry
// (Dictionary_ID) and the SHA-1 of its bytes (zstd dictionary format).
type DictRef struct {
	ID   uint32
	Hash id.ID
}

// String returns the ref as id/hash, for logs.
func (r DictRef) String() string { return fmt.Sprintf("%d/%s", r.ID, r.Hash.Short()) }

// ErrNoDict reports a record compressed with a dictionary the store does
// not hold; MissingDictError names it.
var ErrNoDict = errors.New("archive: zstd dictionary not held")

// MissingDictError is Import's error for a record compressed with a
// dictionary the store does not hold: AddDictionary it (from the peer
// that sent the record) and import again.
type MissingDictError struct{ Ref DictRef }

func (e *MissingDictError) Error() string {
	return fmt.Sprintf("%v: %s", ErrNoDict, e.Ref)
}

// Unwrap returns ErrNoDict.
func (e *MissingDictError) Unwrap() error { return ErrNoDict }

// A record of a .warc.zst segment leaves the store (ReadStored) behind a
// skippable frame naming its dictionary: magic refFrameMagic, length 24,
// then the dictionary's id (little endian) and hash. It never reaches a
// segment.
const (
	refFrameMagic = 0x184D2A5E
	refFrameLen   = 8 + 4 + id.Size
)

// appendRefFrame appends the frame naming r to b.
func appendRefFrame(b []byte, r DictRef) []byte {
	b = binary.LittleEndian.AppendUint32(b, refFrameMagic)
	b = binary.LittleEndian.AppendUint32(b, 4+id.Size)
	b = binary.LittleEndian.AppendUint32(b, r.ID)
	return append(b, r.Hash[:]...)
}

// splitRefFrame returns the dictionary data's leading frame names and the
// bytes after it; ok is false (and rest is data) if data does not start
// with such a frame.
func splitRefFrame(data []byte) (r DictRef, rest []byte, ok bool, err error) {
	if len(data) < 4 || binary.LittleEndian.Uint32(data) != refFrameMagic {
		return DictRef{}, data, false, nil
	}
	if len(data) < refFrameLen || binary.LittleEndian.Uint32(data[4:]) != 4+id.Size {
		return DictRef{}, nil, false, fmt.Errorf("%w: bad dictionary reference", ErrCorrupt)
	}
	r.ID = binary.LittleEndian.Uint32(data[8:])
	copy(r.Hash[:], data[12:refFrameLen])
	return r, data[refFrameLen:], true, nil
}

// keepDict returns the store's zdict for the dictionary raw, adding it
// if new. frame is the dictionary frame a segment starts with
// (readDictFrame), which a new zdict takes as its own; nil for a
// dictionary no segment holds yet, which counts against maxPendingDicts
// and is framed here, outside the store's locks (rollLocked writes the
// frame holding segs.mu).
func (s *Store) keepDict(raw, frame []byte) (*zdict, error) {
	inSegment := frame != nil
	h := id.Sum(raw)
	s.dictMu.Lock()
	if zd := s.dicts[h]; zd != nil {
		if inSegment {
			s.unpendLocked(h)
		}
		s.dictMu.Unlock()
		return zd, nil
	}
	s.dictMu.Unlock()
	zd, err := newZdict(raw)
	if err != nil {
		return nil, err
	}
	if inSegment {
		zd.useFrame(frame)
	} else {
		zd.frame() // outside the lock: it compresses the dictionary
	}
	s.dictMu.Lock()
	defer s.dictMu.Unlock()
	if have := s.dicts[h]; have != nil {
		return have, nil
	}
	if s.dicts == nil {
		s.dicts = make(map[id.ID]*zdict)
	}
	s.dicts[h] = zd
	if !inSegment {
		if len(s.pendingDicts) >= maxPendingDicts {
			delete(s.dicts, s.pendingDicts[0])
			s.pendingDicts = s.pendingDicts[1:]
		}
		s.pendingDicts = append(s.pendingDicts, h)
	}
	return zd, nil
}

// holdDict records that a segment now holds zd (rollLocked): it no longer
// counts as pending, and it stays known even if it was evicted meanwhile.
func (s *Store) holdDict(zd *zdict) {
	s.dictMu.Lock()
	defer s.dictMu.Unlock()
	if s.dicts == nil {
		s.dicts = make(map[id.ID]*zdict)
	}
	if s.dicts[zd.hash] == nil {
		s.dicts[zd.hash] = zd
	}
	s.unpendLocked(zd.hash)
}

func (s *Store) unpendLocked(h id.ID) {
	for i, p := range s.pendingDicts {
		if p == h {
			s.pendingDicts = append(s.pendingDicts[:i], s.pendingDicts[i+1:]...)
			return
		}
	}
}

// dict returns the store's zdict for r, nil if it holds none.
func (s *Store) dict(r DictRef) *zdict {
	s.dictMu.Lock()
	defer s.dictMu.Unlock()
	if zd := s.dicts[r.Hash]; zd != nil && zd.id == r.ID {
		return zd
	}
	return nil
}

// OwnDictionary returns the name of the dictionary the store compresses
// its new records with, and false while it has none (not trained yet,
// or Options.DictSamples negative).
func (s *Store) OwnDictionary() (DictRef, bool) {
	if zd := s.zd.Load(); zd != nil {
		return zd.ref(), true
	}
	return DictRef{}, false
}

// Dictionary returns the bytes of the dictionary r names (zstd
// dictionary format), for a peer that lacks it, or ErrNotFound.
func (s *Store) Dictionary(r DictRef) ([]byte, error) {
	if zd := s.dict(r); zd != nil {
		return zd.raw, nil
	}
	return nil, fmt.Errorf("archive dictionary %s: %w", r, ErrNotFound)
}

// AddDictionary adds raw, received from a peer as the dictionary r names,
// after verifying it: at most MaxDictSize bytes, SHA-1 r.Hash, a zstd
// dictionary whose id is r.ID. Every failure wraps ErrCorrupt. The store
// keeps it once a record compressed with it is stored (in that record's
// segment); until then it is held in memory, maxPendingDicts at most.
func (s *Store) AddDictionary(r DictRef, raw []byte) error {
	switch {
	case len(raw) > MaxDictSize:
		return fmt.Errorf("archive add dictionary %s: %w: %d bytes", r, ErrCorrupt, len(raw))
	case id.Sum(raw) != r.Hash:
		return fmt.Errorf("archive add dictionary %s: %w: its bytes do not hash to its name", r, ErrCorrupt)
	}
	info, err := zstd.InspectDictionary(raw)
	if err != nil {
		return fmt.Errorf("archive add dictionary %s: %w: %w", r, ErrCorrupt, err)
	}
	if info.ID() != r.ID {
		return fmt.Errorf("archive add dictionary %s: %w: its id is %d", r, ErrCorrupt, info.ID())
	}
	if _, err := s.keepDict(raw, nil); err != nil {
		return fmt.Errorf("archive add dictionary %s: %w: %w", r, ErrCorrupt, err)
	}
	return nil
}

// useDict makes zd the dictionary of the records Put writes from now on:
// the next such record opens a new .warc.zst segment.
func (s *Store) useDict(zd *zdict) {
	s.holdDict(zd) // pending until its segment exists, but never evicted before
	s.zd.Store(zd) // before the trainer stops: Import reads off, then zd
	s.trainer.off.Store(true)
}

// adoptTrained is the trainer's done: it writes zd to ownDictFile and
// makes it the store's dictionary, unless the store has closed.
func (s *Store) adoptTrained(zd *zdict) error {
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	if s.closed.Load() {
		return errStoreClosed
	}
	if err := s.saveOwnDict(zd.raw); err != nil {
		return fmt.Errorf("save dictionary: %w", err)
	}
	s.useDict(zd)
	return nil
}

// loadOwnDict, at Open, reads ownDictFile and makes its dictionary the
// store's (unless Options.DictSamples is negative). Without the file (a
// store from before it) the dictionary of the newest .warc.zst segment,
// newest, is the store's own, and the file is written.
func (s *Store) loadOwnDict(newest *zdict) error {
	raw, err := os.ReadFile(filepath.Join(s.dir, ownDictFile))
	var own *zdict
	switch {
	case errors.Is(err, os.ErrNotExist):
		var r []byte
		if newest != nil {
			r = newest.raw
		}
		if err := s.saveOwnDict(r); err != nil {
			return fmt.Errorf("save dictionary: %w", err)
		}
		own = newest
	case err != nil:
		return err
	case len(raw) > 0:
		if own, err = s.keepDict(raw, nil); err != nil {
			// Its records are in segments that carry it: a new one is trained.
			s.log.Error("own dictionary unreadable: training a new one", "file", ownDictFile, "err", err)
			own = nil
		}
	}
	if own != nil && s.trainer.want > 0 {
		s.useDict(own)
	}
	return nil
}

// saveOwnDict writes raw to ownDictFile, durably: a temporary file,
// synced, renamed over it, and the directory synced. (Like
// refused-peers, it is written through the operating system, not the
// segments' file system.)
func (s *Store) saveOwnDict(raw []byte) error {
	name := filepath.Join(s.dir, ownDictFile)
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return err
	}
	if !s.noSync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	if s.noSync {
		return nil
	}
	return syncDir(s.dir)
}
