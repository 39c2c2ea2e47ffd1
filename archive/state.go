package archive

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/binread"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/sortedread"
	"github.com/herod-archive/herod/internal/wire"
)

// stateRecord is what the index keeps of a CrawlState (encode); the URL
// is kept so that reindex and debugging tools can name the entry.
type stateRecord struct {
	URL   string     `json:"url"`
	State CrawlState `json:"state"`
	// versioned: written with a version of URL (Put, or a rebuild from
	// the segments); only the binary form has it.
	versioned bool
}

// State returns the crawl state last set for url, or ErrNotFound.
func (s *Store) State(ctx context.Context, url string) (CrawlState, error) {
	if err := ctx.Err(); err != nil {
		return CrawlState{}, fmt.Errorf("archive state: %w", err)
	}
	// The purge count is read before the state: a purge that removes the
	// URL's versions after the read counts one more (TouchState).
	purges := s.purges.Load()
	val, err := s.db.Get(crawlStateKey(url), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return CrawlState{}, ErrNotFound
	}
	if err != nil {
		return CrawlState{}, fmt.Errorf("archive state: %w", err)
	}
	rec, err := decodeState(val)
	if err != nil {
		return CrawlState{}, fmt.Errorf("archive state: %w: %v", ErrCorrupt, err)
	}
	if rec.versioned {
		rec.State.Versioned = purges + 1
	}
	return rec.State, nil
}

// CheckedOn reports whether url was checked on day (Touch, by the store's
// DayOf) or its crawl state's Checked falls on that day: whether the
// crawler fetched it that day, a 304 included. The touch is a point read,
// which the bloom filter answers for most URLs not checked that day.
func (s *Store) CheckedOn(ctx context.Context, url string, day int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("archive checked on: %w", err)
	}
	k := id.OfString(url)
	ok, err := s.db.Has(touchKey(k, day), nil)
	if err != nil {
		return false, fmt.Errorf("archive checked on: %w", err)
	}
	if ok {
		return true, nil
	}
	st, err := s.State(ctx, url)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("archive checked on: %w", err)
	}
	return !st.Checked.IsZero() && s.DayOf(st.Checked) == day, nil
}

// SetState replaces the crawl state of url. Outlinks are stored sorted and
// without duplicates. The write is not synced: losing the last states in a
// power failure only makes the crawler refetch unconditionally.
func (s *Store) SetState(ctx context.Context, url string, st CrawlState) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("archive set state: %w", err)
	}
	val, err := encodeState(url, st, false)
	if err != nil {
		return fmt.Errorf("archive set state: %w", err)
	}
	if err := s.putState(url, val); err != nil {
		return fmt.Errorf("archive set state: %w", err)
	}
	return nil
}

// encodeState returns the stored form of url's crawl state st; versioned
// says that it is written with a version of url (Put).
func encodeState(url string, st CrawlState, versioned bool) ([]byte, error) {
	if url == "" {
		return nil, errors.New("empty url")
	}
	if st.Outlinks != nil {
		st.Outlinks = slices.Clone(st.Outlinks)
		slices.Sort(st.Outlinks)
		st.Outlinks = slices.Compact(st.Outlinks)
	}
	if !st.Checked.IsZero() {
		st.Checked = st.Checked.UTC().Round(0)
	}
	return stateRecord{URL: url, State: st, versioned: versioned}.encode(), nil
}

// stateBinary is the first byte of a crawl state's binary form, and
// stateBinaryVersioned of the same form written with a version of the
// URL; the JSON form written before them starts with '{'.
const (
	stateBinary          = 1
	stateBinaryVersioned = 2
)

// encode returns the binary form of rec: stateBinary (or
// stateBinaryVersioned when rec.versioned), then the URL, ETag
// and Last-Modified (uvarint length and bytes each), the status
// (uvarint), the digest (20 bytes), Checked (varint seconds and uvarint
// nanoseconds since the epoch), and the outlinks' count followed by each
// outlink front-coded against the one before it (uvarint shared prefix
// length, then its remainder as a string). Sorted outlinks of one page
// share most of their bytes, so the form is a fraction of the JSON one,
// and it decodes without reflection: the crawler reads a URL's state
// before every fetch.
func (rec stateRecord) encode() []byte {
	st := rec.State
	n := 1 + 3*binary.MaxVarintLen64 + len(rec.URL) + len(st.ETag) + len(st.LastModified) +
		4*binary.MaxVarintLen64 + len(st.Digest)
	for _, l := range st.Outlinks {
		n += 2*binary.MaxVarintLen64 + len(l)
	}
	b := make([]byte, 0, n)
	if rec.versioned {
		b = append(b, stateBinaryVersioned)
	} else {
		b = append(b, stateBinary)
	}
	b = appendStr(b, rec.URL)
	b = appendStr(b, st.ETag)
	b = appendStr(b, st.LastModified)
	b = binary.AppendUvarint(b, uint64(st.Status))
	b = append(b, st.Digest[:]...)
	b = binary.AppendVarint(b, st.Checked.Unix())
	b = binary.AppendUvarint(b, uint64(st.Checked.Nanosecond()))
	b = binary.AppendUvarint(b, uint64(len(st.Outlinks)))
	prev := ""
	for _, l := range st.Outlinks {
		p := wire.CommonPrefix(prev, l)
		b = binary.AppendUvarint(b, uint64(p))
		b = appendStr(b, l[p:])
		prev = l
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeState decodes a stored crawl state, binary or the JSON form of
// stores written before the binary one.
func decodeState(val []byte) (stateRecord, error) {
	var rec stateRecord
	if len(val) == 0 {
		return rec, errors.New("empty crawl state")
	}
	if val[0] != stateBinary && val[0] != stateBinaryVersioned {
		if err := json.Unmarshal(val, &rec); err != nil {
			return stateRecord{}, err
		}
		return rec, nil
	}
	rec.versioned = val[0] == stateBinaryVersioned
	r := binread.New(val[1:])
	rec.URL = r.String(math.MaxInt)
	st := &rec.State
	st.ETag = r.String(math.MaxInt)
	st.LastModified = r.String(math.MaxInt)
	st.Status = int(r.Uvarint())
	r.Copy(st.Digest[:])
	if r.Err() != nil {
		return stateRecord{}, errors.New("truncated crawl state")
	}
	st.Checked = r.Time()
	count := r.Uvarint()
	if r.Err() != nil || count > uint64(r.Len()) { // each outlink takes 2 bytes at least
		return stateRecord{}, errors.New("bad crawl state")
	}
	if count > 0 {
		st.Outlinks = make([]string, 0, count)
	}
	prev := ""
	for range count {
		p := r.Uvarint()
		rest := r.Bytes(math.MaxInt)
		if r.Err() != nil || p > uint64(len(prev)) {
			return stateRecord{}, errors.New("bad crawl state outlink")
		}
		prev = prev[:p] + string(rest)
		st.Outlinks = append(st.Outlinks, prev)
	}
	if r.Len() != 0 {
		return stateRecord{}, errors.New("bad crawl state")
	}
	return rec, nil
}

// StateFromVersion returns a crawl state for url derived from its newest
// stored version: the ETag and Last-Modified validators of its headers,
// its HTTP status and payload digest, and Checked at its capture time. It
// lets a node that holds a URL's versions as a replica, and becomes its
// owner, send a conditional GET on its first visit. Outlinks stay empty:
// the first changed version forwards all of its links. It returns an
// error wrapping ErrNotFound when url has no version, and ErrCorrupt when
// the version's file does not verify.
func (s *Store) StateFromVersion(ctx context.Context, url string) (CrawlState, error) {
	if err := ctx.Err(); err != nil {
		return CrawlState{}, fmt.Errorf("archive state from version: %w", err)
	}
	v, err := s.newest(id.OfString(url))
	if err != nil {
		return CrawlState{}, fmt.Errorf("archive state from version %s: %w", url, err)
	}
	c, err := s.Read(ctx, v)
	if err != nil {
		return CrawlState{}, fmt.Errorf("archive state from version %s: %w", url, err)
	}
	return CrawlState{
		ETag:         c.Header.Get("ETag"),
		LastModified: c.Header.Get("Last-Modified"),
		Status:       v.Status,
		Digest:       v.Digest,
		Checked:      v.Time,
	}, nil
}

// HasVersion reports whether url has a stored version.
func (s *Store) HasVersion(url string) (bool, error) {
	ok, err := s.hasVersion(url)
	if err != nil {
		return false, fmt.Errorf("archive has version: %w", err)
	}
	return ok, nil
}

// HasVersions reports, for each of urls (in any order, repeats allowed),
// whether it has a stored version, as HasVersion does, from one view of
// the index: one iterator reads the URLs' host entries in key order,
// stepping to the next when it lies a few entries on and seeking
// otherwise. A batch of one host's URLs is read a block at a time, where
// a HasVersion each is a point read that, at a million URLs, mostly
// misses the block cache (the crawler's daily shareUnversioned asks for
// every known URL).
func (s *Store) HasVersions(urls []string) ([]bool, error) {
	keys := make([][]byte, len(urls))
	for i, u := range urls {
		keys[i] = hostKey(hostOf(u), u)
	}
	out := make([]bool, len(urls))
	err := s.readSorted(pHost, keys, func(i int, _ []byte) error {
		out[i] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive has versions: %w", err)
	}
	return out, nil
}

// readSorted calls found(i, value) for each of keys (all under prefix p,
// in any order) the index holds, in key order, from one iterator over p
// (sortedread.Read). value is valid only during the call.
func (s *Store) readSorted(p byte, keys [][]byte, found func(i int, value []byte) error) error {
	it := s.db.NewIterator(&util.Range{Start: []byte{p}, Limit: []byte{p + 1}}, nil)
	defer it.Release()
	return sortedread.Read(it, keys, found)
}

// States is State for many URLs (in any order) from one view of the
// index: their states are read in key order through one iterator
// (readSorted), so a batch of one host's URLs — consecutive entries —
// reads a block at a time where a State each is a point read that, at a
// million URLs, searches every table it may be in. errs[i] is nil, or
// wraps ErrNotFound or ErrCorrupt as State's error for urls[i] would;
// err is a failed read of the index, and then nothing is returned. The
// states are as of the call: a caller that keeps them has to bound how
// long (a purge after the call voids their Versioned tokens, as it does
// State's).
func (s *Store) States(ctx context.Context, urls []string) (sts []CrawlState, errs []error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("archive states: %w", err)
	}
	purges := s.purges.Load() // before the reads, as State does
	keys := make([][]byte, len(urls))
	sts, errs = make([]CrawlState, len(urls)), make([]error, len(urls))
	for i, u := range urls {
		keys[i] = crawlStateKey(u)
		errs[i] = ErrNotFound
	}
	err = s.readSorted(pCrawl, keys, func(i int, val []byte) error {
		rec, err := decodeState(val)
		if err != nil {
			errs[i] = fmt.Errorf("archive state: %w: %v", ErrCorrupt, err)
			return nil
		}
		if rec.versioned {
			rec.State.Versioned = purges + 1
		}
		sts[i], errs[i] = rec.State, nil
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("archive states: %w", err)
	}
	return sts, errs, nil
}
