package archive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadWithinRoomFirst: the reads a member's request makes ask room
// for the record's stored size before they read any of it: refused, they
// return ErrNoRoom; granted, the record is read after the answer (bytes
// zeroed on disk while room is asked are what the read finds).
func TestReadWithinRoomFirst(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{NoSync: true, DictSamples: -1})
	v, _ := mustPut(t, s, capture("http://a.example/p", t0, "<html>room first</html>"))
	want, err := s.ReadFile(ctx, v.Entry())
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]func(context.Context, Entry, func(int64) bool) ([]byte, error){
		"file": s.ReadFileWithin, "stored": s.ReadStoredWithin,
	}
	for name, read := range reads {
		var asked int64
		_, err := read(ctx, v.Entry(), func(n int64) bool { asked = n; return false })
		if !errors.Is(err, ErrNoRoom) {
			t.Fatalf("%s: room refused: %v, want ErrNoRoom", name, err)
		}
		if asked < v.Size || asked > v.Size+refFrameLen {
			t.Fatalf("%s: room asked for %d bytes, want the stored %d", name, asked, v.Size)
		}
		got, err := read(ctx, v.Entry(), func(int64) bool { return true })
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: room granted: %d bytes, %v", name, len(got), err)
		}
	}
	// Granted only after the record's bytes changed on disk: the read
	// comes after the answer, and finds them.
	_, err = s.ReadFileWithin(ctx, v.Entry(), func(int64) bool {
		f, err := os.OpenFile(filepath.Join(s.Dir(), v.File), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(make([]byte, v.Size), v.Offset); err != nil {
			t.Fatal(err)
		}
		return true
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a record zeroed while room was asked: %v, want ErrCorrupt", err)
	}
}
