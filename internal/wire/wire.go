package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DefaultMax is the frame limit to use when a protocol has no better one.
const DefaultMax = 4 << 20

// ErrTooLarge reports a frame longer than the reader's limit.
var ErrTooLarge = errors.New("wire: frame too large")

// WriteFrame writes b as one frame.
func WriteFrame(w io.Writer, b []byte) error {
	var hdr [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(hdr[:], uint64(len(b)))
	if _, err := w.Write(hdr[:n]); err != nil {
		return fmt.Errorf("wire: write header: %w", err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("wire: write body: %w", err)
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
