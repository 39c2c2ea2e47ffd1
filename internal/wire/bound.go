package wire

import (
	"fmt"
	"io"
)

// Decompressing what a peer sent is where a few bytes become many: a
// zstd or gzip bomb of a few KiB expands to gigabytes, and a header that
// declares a large length makes a careless reader allocate it before a
// byte arrives. Every decompression of peer data goes through these two:
// the output is cut at a limit the caller states (the length the peer
// listed, and the node's --max-body), and memory grows only with the
// bytes that did arrive.

// LimitReader returns a reader of r's first n bytes that fails with an
// error wrapping ErrTooLarge when r holds more, rather than end quietly
// as io.LimitReader does: a truncated record must not pass for a whole
// one. It reads at most n+1 bytes of r.
func LimitReader(r io.Reader, n int64) io.Reader { return &limitReader{r: r, left: n} }

type limitReader struct {
	r    io.Reader
	left int64 // bytes still allowed
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a stream that ends at the limit from one
		// that goes on.
		var one [1]byte
		k, err := l.r.Read(one[:])
		if k > 0 {
			return 0, fmt.Errorf("%w: more than the limit", ErrTooLarge)
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	k, err := l.r.Read(p)
	l.left -= int64(k)
	return k, err
}

// growStep is the first buffer of ReadAll; it doubles from there.
const growStep = 32 << 10

// ReadAll reads r to its end and returns its bytes, failing with an error
// wrapping ErrTooLarge past limit. Its buffer starts small and doubles as
// bytes arrive (never beyond limit), so a reader that claims much and
// delivers little costs little: memory is at most about twice the bytes
// read, and never more than limit.
func ReadAll(r io.Reader, limit int64) ([]byte, error) { return ReadAllSized(r, limit, 0) }

// ReadAllSized is ReadAll with a first buffer of size bytes (within limit):
// the length the sender listed, when the caller has bounded it by what
// arrived (a compression ratio times the compressed bytes, say), so
// that an honest sender's bytes are read without a copy.
func ReadAllSized(r io.Reader, limit, size int64) ([]byte, error) {
	limit = max(limit, 0)
	buf := make([]byte, 0, min(limit, max(size+1, growStep)))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= limit {
				var one [1]byte
				for {
					k, err := r.Read(one[:])
					if k > 0 {
						return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
					}
					if err == io.EOF {
						return buf, nil
					}
					if err != nil {
						return nil, err
					}
				}
			}
			next := make([]byte, len(buf), min(limit, 2*int64(cap(buf))+growStep))
			copy(next, buf)
			buf = next
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
