package id

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
)

// Size is the length of an ID in bytes.
const Size = sha1.Size

// Bits is the length of an ID in bits: the size of the Chord identifier circle.
const Bits = Size * 8

// ID is a 160-bit identifier on the Chord circle, big-endian.
type ID [Size]byte

// ErrSyntax reports text that is not 40 hexadecimal digits.
var ErrSyntax = errors.New("id: not 40 hex digits")

// Sum returns the SHA-1 of b.
func Sum(b []byte) ID { return ID(sha1.Sum(b)) }

// OfString returns the SHA-1 of s.
func OfString(s string) ID { return ID(sha1.Sum([]byte(s))) }

// Parse reads an ID from 40 hexadecimal digits.
func Parse(s string) (ID, error) {
	var x ID
	if len(s) != 2*Size {
		return x, fmt.Errorf("%w: %q", ErrSyntax, s)
	}
	if _, err := hex.Decode(x[:], []byte(s)); err != nil {
		return x, fmt.Errorf("%w: %q", ErrSyntax, s)
	}
	return x, nil
}

// String returns the ID as 40 lowercase hexadecimal digits.
func (x ID) String() string { return hex.EncodeToString(x[:]) }

// Short returns the first 8 hexadecimal digits, for logs.
func (x ID) Short() string { return hex.EncodeToString(x[:4]) }

// MarshalText encodes the ID as hexadecimal.
func (x ID) MarshalText() ([]byte, error) { return []byte(x.String()), nil }

// UnmarshalText decodes hexadecimal produced by MarshalText.
func (x *ID) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*x = v
	return nil
}

// IsZero reports whether x is the all-zero ID.
func (x ID) IsZero() bool { return x == ID{} }

// Cmp compares x and y as unsigned big-endian integers: -1, 0 or +1.
func (x ID) Cmp(y ID) int {
	for i := range x {
		switch {
		case x[i] < y[i]:
			return -1
		case x[i] > y[i]:
			return 1
		}
	}
	return 0
}

// Less reports whether x < y as unsigned integers.
func (x ID) Less(y ID) bool { return x.Cmp(y) < 0 }

// InOpen reports whether x lies in the open interval (a, b) going clockwise
// from a. When a == b the interval is the whole circle except a.
func InOpen(x, a, b ID) bool {
	if a == b {
		return x != a
	}
	if a.Less(b) {
		return a.Less(x) && x.Less(b)
	}
	return a.Less(x) || x.Less(b)
}

// InHalfOpen reports whether x lies in (a, b] going clockwise from a: the
// range a Chord node with predecessor a and id b owns. When a == b the
// interval is the whole circle.
func InHalfOpen(x, a, b ID) bool {
	if a == b {
		return true
	}
	return x == b || InOpen(x, a, b)
}

// AddPow2 returns x + 2^i modulo 2^160, the start of the i-th finger.
// It panics if i is not in [0, Bits).
func (x ID) AddPow2(i int) ID {
	if i < 0 || i >= Bits {
		panic(fmt.Sprintf("id: AddPow2(%d) out of range", i))
	}
	byteIdx := Size - 1 - i/8
	carry := uint16(1) << (i % 8)
	for j := byteIdx; j >= 0 && carry != 0; j-- {
		s := uint16(x[j]) + carry
		x[j] = byte(s)
		carry = s >> 8
	}
	return x
}

// Distance returns the clockwise distance from a to b, (b - a) mod 2^160.
func Distance(a, b ID) *big.Int {
	d := new(big.Int).Sub(new(big.Int).SetBytes(b[:]), new(big.Int).SetBytes(a[:]))
	if d.Sign() < 0 {
		d.Add(d, new(big.Int).Lsh(big.NewInt(1), Bits))
	}
	return d
}

// FromBig returns the ID whose value is v modulo 2^160.
func FromBig(v *big.Int) ID {
	m := new(big.Int).Mod(v, new(big.Int).Lsh(big.NewInt(1), Bits))
	var x ID
	m.FillBytes(x[:])
	return x
}
