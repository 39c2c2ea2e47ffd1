package archive

import (
	"testing"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// TestParseCursor: both cursor forms parse to their position in export
// order (the Wayback form to the end of its second); malformed ones,
// without a URL or too long, are refused.
func TestParseCursor(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	d := id.Sum([]byte("x"))
	tests := []struct {
		in   string
		want Cursor
		ok   bool
	}{
		{CursorOf("http://H.example/a", t0, d).String(), Cursor{"h.example", "http://H.example/a", t0, d}, true},
		{WaybackCursor("http://h.example/a", t0.Add(time.Millisecond)), Cursor{"h.example", "http://h.example/a", t0.Add(time.Second - 1), maxID}, true},
		{"http://h.example/a", Cursor{}, false},
		{"http://h.example/a 2026-05-01T08:00:00Z", Cursor{}, false},
		{"http://h.example/a 2026-05-01T08:00:00Z zz", Cursor{}, false},
		{" 20260501080000", Cursor{}, false},
		{"", Cursor{}, false},
		{"http://h.example/" + string(make([]byte, maxCursorLen)) + " 20260501080000", Cursor{}, false},
	}
	for _, tc := range tests {
		got, err := ParseCursor(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (got.Compare(tc.want) != 0 || got.Host != tc.want.Host)) {
			t.Errorf("ParseCursor(%.60q) = %+v, %v", tc.in, got, err)
		}
	}
}
