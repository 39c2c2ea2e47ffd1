package binread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// The faults a Reader records. Callers usually wrap Err with their own
// context and do not test for these.
var (
	ErrShortUvarint = errors.New("short uvarint")
	ErrShortVarint  = errors.New("short varint")
	ErrShort        = errors.New("short value")
	ErrRange        = errors.New("count out of range")
	ErrTime         = errors.New("time out of range")
)

// Reader reads fields from the front of a byte slice. The zero value
// reads an empty value.
type Reader struct {
	b   []byte
	err error
}

// New returns a Reader of b.
func New(b []byte) Reader { return Reader{b: b} }

// Err returns the first fault recorded, nil when every read succeeded.
func (r *Reader) Err() error { return r.err }

// Fail records err as the Reader's fault unless one is recorded already;
// decoders use it for faults of their own (a field out of its range).
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

// Rest returns what is left unread (nil after a fault).
func (r *Reader) Rest() []byte { return r.b }

// Len returns the number of bytes left unread.
func (r *Reader) Len() int { return len(r.b) }

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.Fail(ErrShortUvarint)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.Fail(ErrShortVarint)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Uint32 reads an unsigned varint that must fit 32 bits (ErrRange).
func (r *Reader) Uint32() uint32 {
	v := r.Uvarint()
	if v > math.MaxUint32 {
		r.Fail(ErrRange)
		return 0
	}
	return uint32(v)
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.b) == 0 {
		r.Fail(ErrShort)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Copy fills dst from the value.
func (r *Reader) Copy(dst []byte) {
	if len(r.b) < len(dst) {
		r.Fail(ErrShort)
		return
	}
	r.b = r.b[copy(dst, r.b):]
}

// Bytes reads a uvarint length, at most max, and that many bytes. The
// result aliases the value being read.
func (r *Reader) Bytes(max int) []byte {
	n := r.Uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(max) || n > uint64(len(r.b)) {
		r.Fail(fmt.Errorf("string of %d bytes", n))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// String reads what Bytes reads, as a string of its own.
func (r *Reader) String(max int) string { return string(r.Bytes(max)) }

// Time reads a time written as a varint of Unix seconds and a uvarint of
// nanoseconds (below 1e9, else ErrTime), in UTC.
func (r *Reader) Time() time.Time {
	sec := r.Varint()
	nsec := r.Uvarint()
	if r.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		r.Fail(ErrTime)
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
