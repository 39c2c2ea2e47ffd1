package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Index key spaces (first byte of every goleveldb key). The index is a
// function of the version files except for the 's' and 't' spaces, which
// hold what the crawler observed without storing a version.
const (
	pVersion  = 'v' // v key(20) time(8) digest(20)  -> versionValue
	pHost     = 'n' // n host 0x00 url               -> key(20)
	pHash     = 'h' // h level(1) prefix(level)      -> sum(20) count(uvarint)
	pMeta     = 'm' // m "stats"                     -> counters
	pState    = 's' // s key(20)                     -> JSON stateRecord
	pTouch    = 't' // t key(20) day(8)              -> time(8)
	pDeferred = 'd' // d file name                   -> its size (uvarint): deferred.go
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

// versionValue is what a version key maps to; key, time and digest come
// from the key itself.
func encodeVersion(v Version, seq int) []byte {
	b := make([]byte, 0, 32+len(v.URL)+len(v.ContentType))
	b = append(b, 1) // format version
	b = binary.AppendUvarint(b, uint64(len(v.URL)))
	b = append(b, v.URL...)
	b = binary.AppendVarint(b, v.Day)
	b = binary.AppendUvarint(b, uint64(v.Status))
	b = binary.AppendUvarint(b, uint64(len(v.ContentType)))
	b = append(b, v.ContentType...)
	b = binary.AppendVarint(b, v.Length)
	return binary.AppendUvarint(b, uint64(seq))
}

var errBadValue = errors.New("bad index value")

// decodeVersion rebuilds a Version from an index key and value.
func decodeVersion(key, val []byte) (Version, error) {
	var v Version
	if len(key) != versionKeyLen || key[0] != pVersion || len(val) == 0 || val[0] != 1 {
		return v, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	copy(v.Key[:], key[1:1+id.Size])
	v.Time = decTime(key[1+id.Size:])
	copy(v.Digest[:], key[1+id.Size+8:])
	r := reader{b: val[1:]}
	v.URL = r.str()
	v.Day = r.varint()
	v.Status = int(r.uvarint())
	v.ContentType = r.str()
	v.Length = r.varint()
	seq := int(r.uvarint())
	if r.err || len(r.b) != 0 {
		return Version{}, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	v.File = Entry{Key: v.Key, Digest: v.Digest, Day: v.Day, Seq: seq}.Path()
	return v, nil
}

// reader decodes the varint fields of index values; err latches.
type reader struct {
	b   []byte
	err bool
}

func (r *reader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.err || n > uint64(len(r.b)) {
		r.err, r.b = true, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// hostKey is the per-URL entry of the host index.
func hostKey(host, url string) []byte {
	b := make([]byte, 0, 2+len(host)+len(url))
	b = append(b, pHost)
	b = append(b, host...)
	b = append(b, 0)
	return append(b, url...)
}

func touchKey(k id.ID, day int64) []byte {
	b := append([]byte{pTouch}, k[:]...)
	return encDay(b, day)
}

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
	r := reader{b: val[1:]}
	c := counters{r.varint(), r.varint(), r.varint(), r.varint()}
	if r.err {
		return counters{}, fmt.Errorf("%w: %w", ErrCorrupt, errBadValue)
	}
	return c, nil
}
