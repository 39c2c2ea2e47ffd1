package links

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestStoredRoundTrip: a link key's binary value gives back the record's
// anchor and times exactly, in UTC, whatever their year and zone.
func TestStoredRoundTrip(t *testing.T) {
	zone := time.FixedZone("X", 5*3600+1800)
	for _, s := range []stored{
		{Seen: time.Date(2026, 11, 30, 8, 1, 2, 123456789, time.UTC)},
		{Anchor: "Über uns – 日本語", Seen: time.Date(2026, 11, 30, 8, 1, 2, 0, zone), Until: time.Date(2026, 11, 29, 0, 0, 0, 1, zone)},
		{Anchor: "a", Seen: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), Until: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Nanosecond)},
		{Seen: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), Until: time.Unix(0, 0)},
	} {
		v := s.encode()
		got, err := decodeStored(v)
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if got.Anchor != s.Anchor || !got.Seen.Equal(s.Seen) || !got.Until.Equal(s.Until) ||
			got.Seen.Location() != time.UTC || (!got.Until.IsZero() && got.Until.Location() != time.UTC) {
			t.Errorf("%+v came back as %+v", s, got)
		}
		j, _ := json.Marshal(s)
		if len(v) >= len(j)/2 {
			t.Errorf("binary value %d bytes, JSON %d", len(v), len(j))
		}
	}
}

// TestStoredBad: a value cut short, with bytes after its end, unknown
// flags or nanoseconds out of range is an error, not a record.
func TestStoredBad(t *testing.T) {
	v := stored{Anchor: "home", Seen: time.Unix(1e9, 5), Until: time.Unix(1e9, 1)}.encode()
	bad := [][]byte{
		{storedBinary},
		v[:len(v)-1],
		append(bytes.Clone(v), 0),
		append([]byte{storedBinary, 2}, v[2:]...),
		{storedBinary, 0, 0, 2, 0x80, 0x94, 0xeb, 0xdc, 0x03}, // nanoseconds 1e9
		{storedBinary, 0, 9, 'a'},
		[]byte(`{"seen":`),
		nil,
	}
	for _, b := range bad {
		if s, err := decodeStored(b); !errors.Is(err, errStored) {
			t.Errorf("%x decoded as %+v, %v", b, s, err)
		}
	}
}

// TestStoredJSONStillRead: values an index wrote in JSON before the
// binary form are read by Links and compared by Put: a copy older than
// the held JSON record is not taken, a newer one replaces it.
func TestStoredJSONStillRead(t *testing.T) {
	ctx := context.Background()
	x, err := Open(t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := Record{Target: "http://a.test/", Source: "http://b.test/p", Anchor: "old text", From: t0, Seen: t0.Add(48 * time.Hour)}
	v, _ := json.Marshal(stored{Anchor: r.Anchor, Seen: r.Seen})
	if err := x.db.Put(linkKey(r), v, nil); err != nil {
		t.Fatal(err)
	}
	links := func() Record {
		t.Helper()
		res, err := x.Links(ctx, r.Target, time.Time{}, 0, nil)
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("links: %+v, %v", res, err)
		}
		return res.Records[0]
	}
	if got := links(); got != r {
		t.Fatalf("JSON record read as %+v, want %+v", got, r)
	}
	older := r
	older.Anchor, older.Seen = "older text", t0.Add(24*time.Hour)
	if _, err := x.Put(ctx, []Record{older}); err != nil {
		t.Fatal(err)
	}
	if got := links(); got != r {
		t.Fatalf("an older copy replaced the JSON record: %+v", got)
	}
	newer := r
	newer.Until, newer.Seen = t0.Add(72*time.Hour), t0.Add(72*time.Hour)
	if _, err := x.Put(ctx, []Record{newer}); err != nil {
		t.Fatal(err)
	}
	if got := links(); got != newer {
		t.Fatalf("the newer copy: %+v, want %+v", got, newer)
	}
	if v, _ := x.db.Get(linkKey(r), nil); len(v) == 0 || v[0] != storedBinary {
		t.Fatalf("the replaced record is stored as %q, not in binary", v)
	}
}

// FuzzDecodeStored: no value makes decodeStored panic, and what it
// returns for a binary value encodes to a value that decodes the same.
func FuzzDecodeStored(f *testing.F) {
	f.Add(stored{Anchor: "x", Seen: time.Unix(1e9, 7), Until: time.Unix(1e9, 3)}.encode())
	f.Add([]byte(`{"a":"x","seen":"2026-01-02T03:04:05Z"}`))
	f.Fuzz(func(t *testing.T, v []byte) {
		s, err := decodeStored(v)
		if err != nil || len(v) == 0 || v[0] != storedBinary {
			return
		}
		again, err := decodeStored(s.encode())
		if err != nil || again.Anchor != s.Anchor || !again.Seen.Equal(s.Seen) || !again.Until.Equal(s.Until) {
			t.Fatalf("%x decoded as %+v, which encodes to %x: %+v, %v", v, s, s.encode(), again, err)
		}
	})
}
