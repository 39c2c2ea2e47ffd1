package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/herod-archive/herod/internal/binread"
	"github.com/herod-archive/herod/internal/id"
)

// Index key spaces (first byte of every goleveldb key). The index is a
// function of the segments except for the 's' and 't' spaces, which hold
// what the crawler observed without storing a version.
const (
	pVersion = 'v' // v key(20) time(8) digest(20)  -> versionValue
	pHost    = 'n' // n host 0x00 url               -> empty (the one-file layout stored key(20))
	pHash    = 'h' // h level(1) prefix(level)      -> sum(20) count(uvarint)
	pMeta    = 'm' // m "stats" -> counters; m 'e' segment(4) -> durable end (uvarint)
	pCrawl   = 'c' // c host 0x00 url               -> stateRecord (binary, or JSON before it: state.go)
	pState   = 's' // s key(20)                     -> stateRecord: the crawl states before pCrawl (statekeys.go moves them)
	pTouch   = 't' // t key(20) day(8)              -> time(8)
	pPeer    = 'p' // p number(4)                   -> signing peer id (interned)
	pWitness = 'w' // w key(20) time(8) digest(20) peer -> seen(8) signature (witness.go)
	pUndated = 'u' // u key(20) time(8) digest(20)      -> empty: imported too late to witness (witness.go)
	// pDeferred listed files awaiting recompression in the one-file
	// layout; migration drops the space.
	pDeferred = 'd'
)

// Version value formats: 1 named a version file (the one-file layout,
// read only by migration), 2 a record in a segment.
const (
	formatFile    = 1
	formatSegment = 2
)

var metaStatsKey = []byte{pMeta, 's', 't', 'a', 't', 's'}

// encTime maps t to 8 bytes whose byte order is time order.
func encTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixNano())^(1<<63))
}

func decTime(b []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(b)^(1<<63))).UTC()
}

func encDay(b []byte, day int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(day)^(1<<63))
}

func decDay(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// versionPrefix is the prefix of every version key of k.
func versionPrefix(k id.ID) []byte {
	return append([]byte{pVersion}, k[:]...)
}

const versionKeyLen = 1 + id.Size + 8 + id.Size

func versionKey(k id.ID, t time.Time, d id.ID) []byte {
	b := make([]byte, 0, versionKeyLen)
	b = append(b, pVersion)
	b = append(b, k[:]...)
	b = encTime(b, t)
	return append(b, d[:]...)
}

// encodeVersion is what a version key maps to; key, time and digest come
// from the key itself, the peer is its interned number (peer.go).
func encodeVersion(v Version, seg uint32, peer uint64) []byte {
	b := make([]byte, 0, 40+len(v.URL)+len(v.ContentType))
	b = append(b, formatSegment)
	b = binary.AppendUvarint(b, uint64(len(v.URL)))
	b = append(b, v.URL...)
	b = binary.AppendVarint(b, v.Day)
	b = binary.AppendUvarint(b, uint64(v.Status))
	b = binary.AppendUvarint(b, uint64(len(v.ContentType)))
	b = append(b, v.ContentType...)
	b = binary.AppendVarint(b, v.Length)
	b = binary.AppendUvarint(b, uint64(v.Seq))
	b = binary.AppendUvarint(b, peer)
	b = binary.AppendUvarint(b, uint64(seg))
	b = binary.AppendUvarint(b, uint64(v.Offset))
	b = binary.AppendUvarint(b, uint64(v.Size))
	if f := versionFlags(v); f != 0 {
		b = binary.AppendUvarint(b, f) // absent when 0: the values written before flags
		b = appendImport(b, v.Imported)
	}
	return b
}

// Flags of a version value, a trailing uvarint written only when not 0.
const (
	flagBrowser  = 1 // Version.Browser
	flagImported = 2 // Version.Imported, whose fields follow the flags (appendImport)
)

// versionFlags returns the flags of v's index value.
func versionFlags(v Version) uint64 {
	var f uint64
	if v.Browser {
		f |= flagBrowser
	}
	if v.Imported != nil {
		f |= flagImported
	}
	return f
}

var errBadValue = errors.New("bad index value")

// storedVersion is a decoded index entry: the Version and the numbers
// the value holds.
type storedVersion struct {
	Version
	format int
	peer   uint64 // interned peer number, 0 for none
	seg    uint32
}

// decodeStored decodes a version entry of either format.
func decodeStored(key, val []byte) (storedVersion, error) {
	var sv storedVersion
	if len(key) != versionKeyLen || key[0] != pVersion || len(val) == 0 || (val[0] != formatFile && val[0] != formatSegment) {
		return sv, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	sv.format = int(val[0])
	v := &sv.Version
	copy(v.Key[:], key[1:1+id.Size])
	v.Time = decTime(key[1+id.Size:])
	copy(v.Digest[:], key[1+id.Size+8:])
	r := binread.New(val[1:])
	v.URL = r.String(math.MaxInt)
	v.Day = r.Varint()
	v.Status = int(r.Uvarint())
	v.ContentType = r.String(math.MaxInt)
	v.Length = r.Varint()
	v.Seq = int(r.Uvarint())
	if sv.format == formatSegment {
		sv.peer = r.Uvarint()
		seg := r.Uvarint()
		v.Offset = int64(r.Uvarint())
		v.Size = int64(r.Uvarint())
		if seg == 0 || seg > 1<<32-1 {
			r.Fail(errBadValue)
		}
		sv.seg = uint32(seg)
		v.File = segmentRel(sv.seg)
		if r.Len() > 0 {
			f := r.Uvarint()
			v.Browser = f&flagBrowser != 0
			if f&flagImported != 0 {
				v.Imported = readImport(&r)
			}
			if f&^(flagBrowser|flagImported) != 0 {
				r.Fail(errBadValue) // flags of a later format: refuse rather than misread
			}
		}
	} else {
		v.File = v.Entry().Path()
	}
	if r.Err() != nil || r.Len() != 0 {
		return storedVersion{}, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	return sv, nil
}

// decodeVersion rebuilds a Version, with its peer's name, from an index
// key and value of the segment format.
func (s *Store) decodeVersion(key, val []byte) (Version, error) {
	sv, err := decodeStored(key, val)
	if err == nil && sv.format != formatSegment {
		err = fmt.Errorf("%w: version of the one-file layout not migrated", ErrCorrupt)
	}
	if err != nil {
		return Version{}, err
	}
	sv.Peer = s.peers.name(sv.peer)
	sv.File = s.segmentRel(sv.seg)
	return sv.Version, nil
}

// hostKey is the per-URL entry of the host index.
func hostKey(host, url string) []byte { return hostOrdered(pHost, host, url) }

// hostOrdered is the key p host 0x00 url: a key space in host order,
// each host's URLs in URL order.
func hostOrdered(p byte, host, url string) []byte {
	b := make([]byte, 0, 2+len(host)+len(url))
	b = append(b, p)
	b = append(b, host...)
	b = append(b, 0)
	return append(b, url...)
}

// splitHostOrdered returns the host and URL of a hostOrdered key, or
// false when k has no such form.
func splitHostOrdered(k []byte) (host, url []byte, ok bool) {
	if len(k) < 1 {
		return nil, nil, false
	}
	i := bytes.IndexByte(k[1:], 0)
	if i < 0 {
		return nil, nil, false
	}
	return k[1 : 1+i], k[2+i:], true
}

func touchKey(k id.ID, day int64) []byte {
	b := append([]byte{pTouch}, k[:]...)
	return encDay(b, day)
}

// crawlStateKey is the key of url's crawl state: in the host index's
// order, so that a host's revisit, which fetches its URLs in URL order,
// reads consecutive entries (a block of them a read) where a key by URL
// hash made each fetch a point read of its own block.
func crawlStateKey(url string) []byte { return hostOrdered(pCrawl, hostOf(url), url) }

// crawlStateURL returns the URL of crawl state key k, or false when k is
// not one.
func crawlStateURL(k []byte) (string, bool) {
	if len(k) == 0 || k[0] != pCrawl {
		return "", false
	}
	_, u, ok := splitHostOrdered(k)
	return string(u), ok
}

// stateKey is the key of a crawl state before crawlStateKey (statekeys.go).
func stateKey(k id.ID) []byte { return append([]byte{pState}, k[:]...) }

// hashKey is the key of the directory hash at level (0..2) for prefix.
func hashKey(level int, prefix []byte) []byte {
	return append([]byte{pHash, byte(level)}, prefix[:level]...)
}

// counters are the store-wide totals kept in the index.
type counters struct {
	versions, urls, bytes, payload int64
}

func (c counters) encode() []byte {
	b := []byte{1}
	for _, x := range []int64{c.versions, c.urls, c.bytes, c.payload} {
		b = binary.AppendVarint(b, x)
	}
	return b
}

func decodeCounters(val []byte) (counters, error) {
	if len(val) == 0 || val[0] != 1 {
		return counters{}, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	r := binread.New(val[1:])
	c := counters{r.Varint(), r.Varint(), r.Varint(), r.Varint()}
	if r.Err() != nil {
		return counters{}, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	return c, nil
}
