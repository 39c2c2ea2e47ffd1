package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb/util"
)

// ReadFile returns the record of the version e names as one gzip member,
// verified as Read verifies it, for a reader that expects standard
// .warc.gz records (gateway reads, exports): a record of a .warc.zst
// segment is decompressed and gzipped. It returns ErrNotFound if the
// store does not hold that version.
func (s *Store) ReadFile(ctx context.Context, e Entry) ([]byte, error) {
	return s.ReadFileWithin(ctx, e, nil)
}

// ErrNoRoom is returned, wrapped, by ReadFileWithin and ReadStoredWithin
// when their room function refuses the record: nothing was read.
var ErrNoRoom = errors.New("archive: no room for the record")

// ReadFileWithin is ReadFile for a caller that bounds the bytes its
// replies hold: once the index names the record, and before any of it is
// read, it asks room (when not nil) for the record's stored size
// (Version.Size); when room refuses, it returns an error wrapping
// ErrNoRoom having read nothing. A record of a .warc.zst segment leaves
// as a gzip member of another size, which the caller counts once it has
// it; the decoding in between is transient.
func (s *Store) ReadFileWithin(ctx context.Context, e Entry, room func(n int64) bool) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive read file: %w", err)
	}
	v, err := s.lookupEntry(e)
	if err != nil {
		return nil, fmt.Errorf("archive read file %s: %w", e.Name(), err)
	}
	if room != nil && !room(v.Size) {
		return nil, fmt.Errorf("archive read file %s: %w", e.Name(), ErrNoRoom)
	}
	data, _, err := s.readMember(v)
	if err != nil {
		return nil, fmt.Errorf("archive read file %s: %w", e.Name(), err)
	}
	return data, nil
}

// ReadStored returns the record of the version e names as it is stored,
// for a replica to store as it is (Import): a gzip member, or a zstd frame
// behind a frame naming its dictionary (DictRef), which the replica
// fetches once if it lacks it. The record is not decompressed: only its
// framing is checked (a gzip header, or a zstd frame of its segment's
// dictionary that fills the extent), since the receiver verifies
// everything as it imports (a damaged record is refused there, and Read
// and fsck find it here). It returns ErrNotFound if the store does not
// hold that version.
func (s *Store) ReadStored(ctx context.Context, e Entry) ([]byte, error) {
	return s.ReadStoredWithin(ctx, e, nil)
}

// ReadStoredWithin is ReadStored asking room (when not nil) for the
// record's stored size before it reads any of it, as ReadFileWithin
// does; the record leaves with at most refFrameLen bytes more (the frame
// naming its dictionary).
func (s *Store) ReadStoredWithin(ctx context.Context, e Entry, room func(n int64) bool) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive read stored %s: %w", e.Name(), err)
	}
	v, err := s.lookupEntry(e)
	if err != nil {
		return nil, fmt.Errorf("archive read stored %s: %w", e.Name(), err)
	}
	if room != nil && !room(v.Size+refFrameLen) {
		return nil, fmt.Errorf("archive read stored %s: %w", e.Name(), ErrNoRoom)
	}
	return s.readStored(e, v)
}

// readStored reads the record of v, which the index names for e, as
// ReadStored returns it.
func (s *Store) readStored(e Entry, v Version) ([]byte, error) {
	ref, err := parseSegment(v.File)
	if err != nil {
		return nil, fmt.Errorf("archive read stored %s: %w", e.Name(), err)
	}
	data, zd, err := s.readRecord(ref.id, v.Offset, v.Size)
	if err == nil {
		err = checkFraming(zd, data)
	}
	if err != nil && s.rewrites.Load() > 0 {
		// A segment rewritten while open (compactOnline) may have moved
		// the record since the look-up: read it where the index has it.
		if nv, lerr := s.lookupEntry(e); lerr == nil && (nv.File != v.File || nv.Offset != v.Offset) {
			return s.readStored(e, nv)
		}
	}
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			s.corrupt.Add(1)
		}
		return nil, fmt.Errorf("archive read stored %s: %s+%d: %w", e.Name(), v.File, v.Offset, err)
	}
	if zd == nil {
		return data, nil
	}
	out := make([]byte, 0, refFrameLen+len(data))
	return append(appendRefFrame(out, zd.ref()), data...), nil
}

// checkFraming checks, without decompressing it, that data is one record
// of a segment of dictionary zd: a zstd frame of zd that data fills, or
// (zd nil) bytes that start as a gzip member.
func checkFraming(zd *zdict, data []byte) error {
	if zd == nil {
		if len(data) < 18 || data[0] != 0x1f || data[1] != 0x8b {
			return fmt.Errorf("%w: not a gzip member", ErrCorrupt)
		}
		return nil
	}
	end, dictID, err := zstdFrameEnd(bytes.NewReader(data), 0, int64(len(data)))
	switch {
	case err != nil:
		return err
	case end != int64(len(data)):
		return fmt.Errorf("%w: %d bytes after the zstd frame", ErrCorrupt, int64(len(data))-end)
	case dictID != zd.id:
		return fmt.Errorf("%w: zstd frame of dictionary %d in a segment of %d", ErrCorrupt, dictID, zd.id)
	}
	return nil
}

// Holds reports whether the store holds the version e names: what a
// replica asks before it reads an offered record from its owner.
func (s *Store) Holds(ctx context.Context, e Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("archive holds: %w", err)
	}
	_, err := s.lookupEntry(e)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("archive holds %s: %w", e.Name(), err)
}

// lookupEntry returns the version e names, or ErrNotFound.
func (s *Store) lookupEntry(e Entry) (Version, error) {
	it := s.db.NewIterator(util.BytesPrefix(versionPrefix(e.Key)), nil)
	defer it.Release()
	for it.Next() {
		v, err := s.decodeVersion(it.Key(), it.Value())
		if err != nil {
			return Version{}, err
		}
		if v.Entry() == e {
			return v, nil
		}
	}
	if err := it.Error(); err != nil {
		return Version{}, err
	}
	return Version{}, ErrNotFound
}

// Import stores a record received from a replica under its name, after
// verifying it: one gzip member, or one zstd frame behind the frame
// naming its dictionary (ReadStored), holding one WARC response record,
// digests, and a name that matches its URL, payload and day (so replicas
// must share the day length), a capture time not in the future, and,
// with Options.Verifier, its fetcher's signature by a peer not refused
// (provenance.go). The record is stored as it was sent: a gzip member in
// a .warc.gz segment, a zstd frame in a .warc.zst segment of its
// dictionary. A record of a dictionary the store does not hold returns a
// *MissingDictError (wrapping ErrNoDict) before anything is decoded:
// AddDictionary it and import again. It does not deduplicate against the
// newest version: replicas hold exactly the versions their peers hold. A
// record whose payload may exceed Options.MaxBody is refused before its
// block is read, and its decompression stops at that bound
// (decodeMemberMax, decodeFrameMax): a record that expands to much costs
// no more than the bound. It returns added == false if the version is
// already stored (a version of the same name is held: data is then
// neither decoded nor verified, since none of it is stored), ErrCorrupt for a record that fails verification,
// ErrQuota when the quota is reached.
func (s *Store) Import(ctx context.Context, name string, data []byte) (Version, bool, error) {
	return s.importRecord(ctx, name, data, true, nil)
}

// ErrNotTaken is ImportIf's answer for a record its caller did not take.
var ErrNotTaken = errors.New("record not taken")

// ImportIf is Import, asking take, once the record is verified as
// CheckImport verifies it, whether to store it: if take returns false it
// stores nothing and returns the version the record names with an error
// wrapping ErrNotTaken. A caller that decides from the version (a round's
// guard holds a replica's capture of a URL this node was crawling) thus
// decodes the record and checks its signature once, where CheckImport
// followed by Import did both twice. A version held already returns as
// Import returns it, without asking take.
func (s *Store) ImportIf(ctx context.Context, name string, data []byte, take func(Version) bool) (Version, bool, error) {
	if take == nil {
		return Version{}, false, errors.New("archive import: ImportIf without take")
	}
	return s.importRecord(ctx, name, data, true, take)
}

// importRecord is Import; without provenance set it skips the signature
// and capture-time checks (for the store's own files, in migration); with
// take (ImportIf) it stores the record only if take says so.
func (s *Store) importRecord(ctx context.Context, name string, data []byte, provenance bool, take func(Version) bool) (Version, bool, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	s.adding.Add(1)
	defer s.adding.Add(-1)
	if s.closed.Load() {
		return Version{}, false, errors.New("archive import: store closed")
	}
	if err := s.failure(); err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	e, err := ParseName(name)
	if err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	if have, err := s.lookupEntry(e); err == nil {
		// Held already (a round and the push both copied it): nothing of
		// data would be stored, so it is not decoded or verified.
		return have, false, nil
	}
	var buf importBuf
	defer buf.release() // after the record is stored and offered: it holds buf's bytes
	// Under way from its decoding on, as a Put is from its compression:
	// the records of an offer, decoded side by side (replicate.storeAll),
	// then join one index group and share its syncs, where counted only
	// once decoded each found the committer with nothing under way.
	giveUp, indexed := s.beginWrite(), false
	defer func() {
		if !indexed {
			giveUp()
		}
	}()
	ci, err := s.checkImport(e, name, data, provenance, s.trainer.collecting(), &buf)
	if err != nil {
		return Version{}, false, err
	}
	v, zd, frame, plain := ci.v, ci.zd, ci.frame, ci.plain
	if take != nil {
		if s.urlp.covers(v.URL, v.Time) { // as CheckImport answers
			return Version{}, false, fmt.Errorf("archive import %s: %w: %w", name, ErrCorrupt, ErrPurged)
		}
		if !take(v) {
			return v, false, fmt.Errorf("archive import %s: %w", name, ErrNotTaken)
		}
	}
	lk := &s.keyLocks[e.Key[len(e.Key)-1]]
	if !lk.TryLock() {
		// Not counted while it waits for another write of its key, which
		// may be waiting for its group (Put).
		giveUp()
		lk.Lock()
		giveUp = s.beginWrite()
	}
	defer lk.Unlock()
	if s.urlp.covers(v.URL, v.Time) { // checked under the lock: PurgeURLs takes every one
		return Version{}, false, fmt.Errorf("archive import %s: %w: %w", name, ErrCorrupt, ErrPurged)
	}
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
	if !s.trainer.off.Load() {
		s.trainer.offer(plain) // nil when not collecting: counts towards DictWait
	}
	seg, err := s.store(&v, &record{data: frame, zd: zd})
	if err != nil {
		return Version{}, false, fmt.Errorf("archive import %s: %w", name, err)
	}
	var w *Witness
	if provenance {
		// The store's statement that it holds v from now on (witness.go),
		// committed with the version.
		if w, err = s.ownWitness(v); err != nil {
			s.log.Warn("archive import: cannot witness", "url", v.URL, "err", err)
			w = nil
		}
	}
	indexed = true // index ends the write, whatever it returns
	if err := s.index(v, seg, first, nil, w); err != nil {
		return Version{}, false, fmt.Errorf("archive import: %w", err)
	}
	if zd != nil {
		s.trainer.consider(zd) // a peer's dictionary, adopted if the store has none (adopt.go)
	}
	if fn := s.imported.Load(); fn != nil {
		(*fn)(v)
	}
	return v, true, nil
}

// checkedImport is a record checkImport decoded and verified: the version
// it names and what storing it needs.
type checkedImport struct {
	v     Version
	zd    *zdict // nil for a gzip member
	frame []byte // the record without its dictionary reference
	plain []byte // the uncompressed record, when sampling
}

// checkImport decodes and verifies data, the record named name (e), as
// Import does before it stores: framing, the name against the record,
// the day, and with provenance the fetcher's signature and capture time.
// With sample it keeps the uncompressed record of a gzip member (for the
// dictionary trainer). A zstd record is decompressed into buf (if not
// nil): what checkImport returns holds its bytes until buf is released.
func (s *Store) checkImport(e Entry, name string, data []byte, provenance, sample bool, buf *importBuf) (checkedImport, error) {
	ref, frame, named, err := splitRefFrame(data)
	if err != nil {
		return checkedImport{}, fmt.Errorf("archive import %s: %w", name, err)
	}
	var zd *zdict
	if named {
		if zd = s.dict(ref); zd == nil {
			return checkedImport{}, fmt.Errorf("archive import %s: %w", name, &MissingDictError{Ref: ref})
		}
	}
	// The uncompressed record is needed only to sample it.
	var plain []byte
	var f *decodedFile
	if zd != nil {
		f, plain, err = decodeFrameMax(zd, frame, s.importBlock(), buf)
	} else {
		var raw *bytes.Buffer
		if sample {
			raw = new(bytes.Buffer)
		}
		f, err = decodeMemberMax(frame, raw, s.importBlock())
		if raw != nil {
			plain = raw.Bytes()
		}
	}
	if err == nil {
		err = checkEntry(e, f, "")
	}
	if err == nil && s.DayOf(f.capture.Time) != e.Day {
		err = fmt.Errorf("%w: day %d in name, %d from WARC-Date (day lengths differ?)",
			ErrCorrupt, e.Day, s.DayOf(f.capture.Time))
	}
	if err == nil && provenance {
		err = s.checkProvenance(f)
	}
	if err != nil {
		return checkedImport{}, fmt.Errorf("archive import %s: %w", name, err)
	}
	c := &f.capture
	v := Version{
		URL: c.URL, Key: e.Key, Digest: e.Digest, Day: e.Day, Time: c.Time, Status: c.Status,
		ContentType: MediaType(c.Header.Get("Content-Type")),
		Length:      int64(len(c.Body)), Seq: e.Seq, Peer: c.Peer, Browser: c.Browser, Imported: c.Imported,
	}
	return checkedImport{v: v, zd: zd, frame: frame, plain: plain}, nil
}

// CheckImport verifies data, the record named name, as Import does —
// framing, the name, the fetcher's signature, a capture time not in the
// future, a URL and time no purge order covers — and returns the version
// it names, storing nothing. A record of a dictionary the store lacks
// returns a *MissingDictError, as Import does. A node holds a record a
// member hands off to it this way until its own fetch confirms the
// payload (node/replication, held.go).
func (s *Store) CheckImport(ctx context.Context, name string, data []byte) (Version, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, fmt.Errorf("archive check: %w", err)
	}
	if s.closed.Load() {
		return Version{}, errors.New("archive check: store closed")
	}
	e, err := ParseName(name)
	if err != nil {
		return Version{}, fmt.Errorf("archive check: %w", err)
	}
	var buf importBuf
	defer buf.release()
	ci, err := s.checkImport(e, name, data, true, false, &buf)
	if err != nil {
		return Version{}, err
	}
	if s.urlp.covers(ci.v.URL, ci.v.Time) {
		return Version{}, fmt.Errorf("archive check %s: %w: %w", name, ErrCorrupt, ErrPurged)
	}
	return ci.v, nil
}

// importBlock is the largest block Import reads: Options.MaxBody and room
// for the HTTP head, or the reader's limit without MaxBody.
func (s *Store) importBlock() int64 {
	if s.maxBody <= 0 {
		return maxBlock
	}
	return min(s.maxBody+MaxHead, maxBlock)
}
