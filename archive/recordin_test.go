package archive

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzRecordIn: recordIn, which slices a record's block out of the
// decompressed frame, accepts exactly what readOnlyMax (the copying
// reader it replaces on import) accepts, with the same fields and block,
// and fails only with ErrCorrupt.
func FuzzRecordIn(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "response.warc")); err == nil {
		f.Add(data, int64(len(data)))
		f.Add(data, int64(100))
		f.Add(data[:len(data)/2], int64(len(data)))
		f.Add(append(bytes.Clone(data), 'x'), int64(len(data)))
	}
	f.Add([]byte("WARC/1.0\r\nContent-Length: 0\r\n\r\n\r\n\r\n"), int64(64))
	f.Add([]byte("\r\n\r\nWARC/1.1\r\nContent-Length: 5\r\n\r\nHTTP/\r\n\r\n"), int64(64))
	f.Add([]byte("WARC/1.1\r\nContent-Length: 5\r\n\r\nHTTP/\r\n\r"), int64(64))
	f.Add([]byte("WARC/1.1\r\nContent-Length: -1\r\n\r\n"), int64(64))
	f.Add([]byte(""), int64(64))
	f.Fuzz(func(t *testing.T, data []byte, max int64) {
		got, err := recordIn(data, max)
		want, werr := readOnlyMax(bufio.NewReader(bytes.NewReader(data)), max, false)
		if (err == nil) != (werr == nil) {
			t.Fatalf("recordIn: %v; readOnlyMax: %v", err, werr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not wrapping ErrCorrupt: %v", err)
			}
			return
		}
		if got.Version != want.Version || !reflect.DeepEqual(got.Header, want.Header) || !bytes.Equal(got.Block, want.Block) {
			t.Fatalf("recordIn %+v, readOnlyMax %+v", got, want)
		}
	})
}
