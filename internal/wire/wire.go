package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// DefaultMax is the frame limit to use when a protocol has no better one.
const DefaultMax = 4 << 20

// ErrTooLarge reports a frame longer than the reader's limit.
var ErrTooLarge = errors.New("wire: frame too large")

// WriteFrame writes b as one frame, in a single Write: on a libp2p stream
// every Write becomes its own muxer frame and encrypted message, so a
// header written apart would cost a second set of framing bytes.
func WriteFrame(w io.Writer, b []byte) error {
	buf := make([]byte, 0, binary.MaxVarintLen64+len(b))
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	buf = append(buf, b...)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("wire: write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame of at most max bytes. It returns io.EOF only
// when the stream ends cleanly before a frame starts.
func ReadFrame(r *bufio.Reader, max int) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("wire: read header: %w", err)
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("wire: read body: %w", err)
	}
	return b, nil
}

// WriteJSON encodes v as JSON and writes it as one frame.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("wire: encode: %w", err)
	}
	return WriteFrame(w, b)
}

// ReadJSON reads one frame of at most max bytes and decodes it into v.
func ReadJSON(r *bufio.Reader, max int, v any) error {
	b, err := ReadFrame(r, max)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("wire: decode: %w", err)
	}
	if dec.More() {
		return errors.New("wire: decode: trailing data in frame")
	}
	return nil
}

// Hooks are what a protocol service reports through, both optional: a
// counter of requests that did not parse and a logger. Services embed it.
type Hooks struct {
	BadFrame func()       // counts a request that did not parse; nil counts nothing
	Logger   *slog.Logger // nil discards
}

// CountBadFrame counts a request that did not parse.
func (h *Hooks) CountBadFrame() {
	if h.BadFrame != nil {
		h.BadFrame()
	}
}

// Log returns the logger, one that discards if none is set.
func (h *Hooks) Log() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// CommonPrefix returns the length in bytes of the longest common prefix
// of a and b: what front-coding a sorted list of strings keeps of the
// previous one.
func CommonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
