package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	type msg struct {
		A string
		B []int
	}
	in := []msg{{"x", []int{1, 2}}, {"", nil}}
	for _, m := range in {
		if err := WriteJSON(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(&buf)
	for i := range in {
		var got msg
		if err := ReadJSON(r, 1024, &got); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.A != in[i].A || len(got.B) != len(in[i].B) {
			t.Fatalf("frame %d = %+v", i, got)
		}
	}
	if _, err := ReadFrame(r, 1024); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

func TestLimits(t *testing.T) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, make([]byte, 100))
	if _, err := ReadFrame(bufio.NewReader(&buf), 99); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized frame: %v", err)
	}
	buf.Reset()
	_ = WriteFrame(&buf, make([]byte, 100))
	short := bufio.NewReader(bytes.NewReader(buf.Bytes()[:50]))
	if _, err := ReadFrame(short, 1000); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("truncated frame: %v", err)
	}
	buf.Reset()
	_ = WriteFrame(&buf, []byte(`{"A":"x"} {"A":"y"}`))
	var v struct{ A string }
	if err := ReadJSON(bufio.NewReader(&buf), 1000, &v); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for {
			fr, err := ReadFrame(r, 64)
			if err != nil {
				return
			}
			if len(fr) > 64 {
				t.Fatalf("frame of %d bytes exceeds limit", len(fr))
			}
		}
	})
}

func TestCommonPrefix(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "", 0}, {"abc", "abd", 2}, {"ab", "abc", 2}, {"abc", "abc", 3}, {"x", "y", 0}} {
		if got := CommonPrefix(c.a, c.b); got != c.want {
			t.Errorf("CommonPrefix(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
