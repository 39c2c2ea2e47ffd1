package id

import (
	"math/big"
	"testing"
)

func mk(b byte) ID { var x ID; x[Size-1] = b; return x }

func TestIntervals(t *testing.T) {
	tests := []struct {
		x, a, b     byte
		open, halfO bool
	}{
		{5, 1, 9, true, true},
		{9, 1, 9, false, true},
		{1, 1, 9, false, false},
		{0, 9, 1, true, true}, // wraps
		{10, 9, 1, true, true},
		{5, 9, 1, false, false},
		{1, 9, 1, false, true},
		{3, 3, 3, false, true}, // a == b: whole circle
		{4, 3, 3, true, true},
	}
	for _, tc := range tests {
		x, a, b := mk(tc.x), mk(tc.a), mk(tc.b)
		if got := InOpen(x, a, b); got != tc.open {
			t.Errorf("InOpen(%d,%d,%d) = %v", tc.x, tc.a, tc.b, got)
		}
		if got := InHalfOpen(x, a, b); got != tc.halfO {
			t.Errorf("InHalfOpen(%d,%d,%d) = %v", tc.x, tc.a, tc.b, got)
		}
	}
}

func TestAddPow2MatchesBig(t *testing.T) {
	x := OfString("herod")
	for i := 0; i < Bits; i++ {
		want := FromBig(new(big.Int).Add(new(big.Int).SetBytes(x[:]), new(big.Int).Lsh(big.NewInt(1), uint(i))))
		if got := x.AddPow2(i); got != want {
			t.Fatalf("AddPow2(%d) = %s, want %s", i, got, want)
		}
	}
	var max ID
	for i := range max {
		max[i] = 0xff
	}
	if got := max.AddPow2(0); !got.IsZero() {
		t.Fatalf("wrap: got %s", got)
	}
}

func TestParseRoundTrip(t *testing.T) {
	x := OfString("http://example.com/")
	y, err := Parse(x.String())
	if err != nil || y != x {
		t.Fatalf("Parse(String()) = %v, %v", y, err)
	}
	if _, err := Parse("zz"); err == nil {
		t.Fatal("Parse accepted junk")
	}
	if d := Distance(mk(9), mk(1)); d.Cmp(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), Bits), big.NewInt(8))) != 0 {
		t.Fatalf("Distance wrap = %v", d)
	}
}
