package binread

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"
)

func TestReadBack(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	var b []byte
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendVarint(b, -5)
	b = binary.AppendUvarint(b, math.MaxUint32)
	b = append(b, 7)
	b = append(b, "abcd"...)
	b = binary.AppendUvarint(b, 3)
	b = append(b, "xyz"...)
	b = binary.AppendVarint(b, at.Unix())
	b = binary.AppendUvarint(b, uint64(at.Nanosecond()))
	b = append(b, "rest"...)

	r := New(b)
	var four [4]byte
	if got := r.Uvarint(); got != 300 {
		t.Fatalf("Uvarint = %d", got)
	}
	if got := r.Varint(); got != -5 {
		t.Fatalf("Varint = %d", got)
	}
	if got := r.Uint32(); got != math.MaxUint32 {
		t.Fatalf("Uint32 = %d", got)
	}
	if got := r.Byte(); got != 7 {
		t.Fatalf("Byte = %d", got)
	}
	r.Copy(four[:])
	if string(four[:]) != "abcd" {
		t.Fatalf("Copy = %q", four)
	}
	if got := r.String(3); got != "xyz" {
		t.Fatalf("String = %q", got)
	}
	if got := r.Time(); !got.Equal(at) || got.Location() != time.UTC {
		t.Fatalf("Time = %v", got)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if string(r.Rest()) != "rest" || r.Len() != 4 {
		t.Fatalf("Rest = %q", r.Rest())
	}
}

// TestFaults: each read past the end or out of range records its fault,
// the first one stays, and every later read returns zero.
func TestFaults(t *testing.T) {
	big := binary.AppendUvarint(nil, math.MaxUint32+1)
	badTime := binary.AppendUvarint(binary.AppendVarint(nil, 1), 1e9)
	long := append(binary.AppendUvarint(nil, 5), "abcde"...)
	for _, c := range []struct {
		name string
		b    []byte
		read func(r *Reader)
		want error
	}{
		{"uvarint", nil, func(r *Reader) { r.Uvarint() }, ErrShortUvarint},
		{"overlong uvarint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(r *Reader) { r.Uvarint() }, ErrShortUvarint},
		{"varint", []byte{0x80}, func(r *Reader) { r.Varint() }, ErrShortVarint},
		{"uint32", big, func(r *Reader) { r.Uint32() }, ErrRange},
		{"byte", nil, func(r *Reader) { r.Byte() }, ErrShort},
		{"copy", []byte("ab"), func(r *Reader) { r.Copy(make([]byte, 3)) }, ErrShort},
		{"time", badTime, func(r *Reader) { r.Time() }, ErrTime},
		{"time short", []byte{2}, func(r *Reader) { r.Time() }, ErrShortUvarint},
	} {
		r := New(c.b)
		c.read(&r)
		if !errors.Is(r.Err(), c.want) {
			t.Errorf("%s: Err = %v, want %v", c.name, r.Err(), c.want)
		}
		if r.Len() != 0 || r.Rest() != nil {
			t.Errorf("%s: %d bytes left after a fault", c.name, r.Len())
		}
	}

	r := New(long)
	if got := r.Bytes(4); got != nil || r.Err() == nil {
		t.Fatalf("Bytes over its bound = %q, %v", got, r.Err())
	}
	first := r.Err()
	r.Fail(errors.New("later"))
	if r.Err() != first {
		t.Fatalf("Fail replaced the first fault: %v", r.Err())
	}
	if r.Uvarint() != 0 || r.Byte() != 0 || r.String(10) != "" || !r.Time().IsZero() {
		t.Fatal("a read after a fault returned data")
	}

	r = New(append(binary.AppendUvarint(nil, 9), "abc"...))
	if got := r.Bytes(100); got != nil || r.Err() == nil {
		t.Fatalf("Bytes past the end = %q, %v", got, r.Err())
	}
}

// TestBytesAliasBounded: the slice Bytes returns cannot grow into the
// bytes after it.
func TestBytesAliasBounded(t *testing.T) {
	r := New(append(binary.AppendUvarint(nil, 2), "abcd"...))
	got := r.Bytes(2)
	if cap(got) != 2 {
		t.Fatalf("cap = %d", cap(got))
	}
	_ = append(got, 'X')
	if string(r.Rest()) != "cd" {
		t.Fatalf("rest = %q", r.Rest())
	}
}

// FuzzReader: no input makes a Reader panic or read past its input, and
// the bytes consumed plus those left make the input.
func FuzzReader(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0x80, 0x01})
	f.Add(binary.AppendUvarint(nil, math.MaxUint64))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := New(b)
		var x [3]byte
		for i := 0; r.Err() == nil && r.Len() > 0 && i < 64; i++ {
			before := r.Len()
			switch b[len(b)-before] % 7 {
			case 0:
				r.Uvarint()
			case 1:
				r.Varint()
			case 2:
				r.Uint32()
			case 3:
				r.Byte()
			case 4:
				r.Copy(x[:])
			case 5:
				r.Bytes(8)
			case 6:
				r.Time()
			}
			if r.Err() == nil && r.Len() >= before {
				t.Fatalf("a read consumed nothing: %d left of %d", r.Len(), before)
			}
		}
	})
}
