package archive

import (
	"bufio"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/internal/id"
)

// Streaming a payload. Read returns a capture whole: its record is read
// into memory, decompressed and verified before the first byte is used.
// OpenBody instead reads a version's record from its segment file as its
// payload is consumed, so that a large payload costs a reader its
// decompressor and buffers (about 100 KiB), not its size: the gateway
// serves raw and large replies this way. The record's WARC and HTTP heads
// are checked before OpenBody returns; its block and payload digests, and
// the end of its gzip member, when the payload has been read to its end:
// a record damaged in its payload fails the last Read with ErrCorrupt
// after its other bytes were delivered.
//
// A record of a .warc.zst segment streams when its frame's window is
// at most streamWindow (256 KiB): every record written since frames were
// given that window (a larger record's single-segment frame would keep
// its whole content as history). A record in an older, larger frame is
// refused with ErrNotStreamable and the caller reads it whole (Read).

// ErrNotStreamable reports a version whose record OpenBody does not read
// as a stream (a .warc.zst record in a frame of a window over 256 KiB, or
// one this store does not hold in its files): read it with Read instead.
var ErrNotStreamable = errors.New("archive: record not streamable")

// Body is the payload of a stored capture, read from its segment file as
// it is consumed (OpenBody). Capture holds the record's URL, time,
// status, header and provenance, with Body nil. A Body is not safe for
// concurrent use; Close releases its file section and decompressor.
type Body struct {
	Capture
	// Size is the payload's length in bytes.
	Size int64
	// Held is about the memory the open body holds, its decompressor and
	// buffers, in bytes: for a budget to charge it.
	Held int64

	s       *Store
	v       Version
	f       segFile       // the segment's handle, released by Close
	release func() error  // frees the decompressor
	outer   *bufio.Reader // the record, uncompressed
	inner   *bufio.Reader // the block, after the HTTP head
	block   *hashCount    // what inner has read of the block
	payload hash.Hash
	left    int64 // payload bytes not read yet
	wantB   id.ID // block digest
	err     error // sticky: the end's verdict, or a read error
}

// hashCount hashes and counts what is read through it.
type hashCount struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (c *hashCount) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// What an open Body holds (Body.Held): its two 16 KiB buffers and its
// decompressor, measured with 40 bodies open (a gzip reader and its 32
// KiB window; a zstd decoder with its 256 KiB window, block ring,
// block buffers and dictionary tables, about 750 KiB).
const (
	gzipHeld = 128 << 10
	zstdHeld = 800 << 10
)

// OpenBody opens the payload of v, a version of this store, for reading
// as a stream (see above). It checks the record's heads against v before
// returning; errors wrap ErrNotFound (no such segment), ErrCorrupt or
// ErrNotStreamable.
func (s *Store) OpenBody(ctx context.Context, v Version) (*Body, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive open body: %w", err)
	}
	ref, err := parseSegment(v.File)
	if err != nil {
		return nil, fmt.Errorf("archive open body %s: %w: %w", v.URL, ErrNotStreamable, err)
	}
	s.segs.rmu.RLock()
	g := s.segs.open[ref.id]
	var f segFile
	var zd *zdict
	if g != nil {
		f, zd = g.f, g.zd // a rewrite (compact.go) may replace f; the stream keeps this one
		s.streams.acquire(f)
	}
	s.segs.rmu.RUnlock()
	released := false
	defer func() {
		if f != nil && !released {
			s.streams.release(f)
		}
	}()
	switch {
	case g == nil:
		return nil, fmt.Errorf("archive open body: segment %s: %w", v.File, ErrNotFound)
	case g.zst && zd == nil:
		return nil, fmt.Errorf("archive open body: segment %s: %w: dictionary frame unreadable", v.File, ErrCorrupt)
	case v.Size <= 0 || v.Size > 2*maxBlock || v.Offset < 0:
		return nil, fmt.Errorf("archive open body: %w: bad record extent %d+%d", ErrCorrupt, v.Offset, v.Size)
	}
	b := &Body{s: s, v: v, Held: gzipHeld}
	sec := io.NewSectionReader(f, v.Offset, v.Size)
	var plain io.Reader
	if zd != nil {
		if plain, err = b.openFrame(zd, sec); err != nil {
			return nil, err
		}
	} else {
		zr, err := gzip.NewReader(sec)
		if err != nil {
			return nil, b.corrupt(fmt.Errorf("%w: gzip: %v", ErrCorrupt, err))
		}
		zr.Multistream(false)
		plain, b.release = zr, zr.Close
	}
	b.outer = bufio.NewReaderSize(plain, 16<<10)
	if err := b.head(); err != nil {
		b.release()
		return nil, b.corrupt(asCorrupt(err))
	}
	b.f, released = f, true // Close releases it
	return b, nil
}

// openFrame opens the record in sec, one zstd frame of dictionary zd, if
// its window allows streaming it (see above).
func (b *Body) openFrame(zd *zdict, sec *io.SectionReader) (io.Reader, error) {
	var h [maxFrameHead]byte
	k, _ := sec.ReadAt(h[:], 0)
	fh, err := parseFrameHead(h[:k])
	switch {
	case err != nil:
		return nil, b.corrupt(fmt.Errorf("%w: zstd: %v", ErrCorrupt, err))
	case fh.dictID != zd.id:
		return nil, b.corrupt(fmt.Errorf("%w: zstd frame of dictionary %d, want %d", ErrCorrupt, fh.dictID, zd.id))
	case fh.window > streamWindow:
		return nil, fmt.Errorf("archive open body %s: %w: a zstd frame of a %d-byte window", b.v.URL, ErrNotStreamable, fh.window)
	}
	d, err := zd.streamDecoder(sec)
	if err != nil {
		return nil, err
	}
	b.release = func() error {
		zd.putStreamDecoder(d)
		return nil
	}
	b.Held = zstdHeld
	return d, nil
}

// head reads and checks the record's WARC head and its block's HTTP head.
func (b *Body) head() error {
	line, err := readLine(b.outer)
	if err == nil && line != "WARC/1.1" && line != "WARC/1.0" {
		err = malformed("bad version line %q", line)
	}
	if err != nil {
		return err
	}
	h, err := readFields(b.outer)
	if err != nil {
		return err
	}
	blockLen, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil || blockLen < 0 || blockLen > maxBlock {
		return malformed("bad Content-Length %q", h.Get("Content-Length"))
	}
	t, err := time.Parse(time.RFC3339Nano, h.Get("Warc-Date"))
	switch {
	case h.Get("Warc-Type") != "response" && h.Get("Warc-Type") != "resource":
		return malformed("record type %q, want response or resource", h.Get("Warc-Type"))
	case h.Get("Warc-Target-Uri") != b.v.URL || id.OfString(b.v.URL) != b.v.Key:
		return fmt.Errorf("%w: record holds %q", ErrCorrupt, h.Get("Warc-Target-Uri"))
	case err != nil || !t.Equal(b.v.Time):
		return fmt.Errorf("%w: record dated %q, the index %s", ErrCorrupt, h.Get("Warc-Date"), b.v.Time)
	}
	if b.wantB, err = parseWarcDigest(h.Get("Warc-Block-Digest")); err != nil {
		return malformed("WARC-Block-Digest: %v", err)
	}
	pd, err := parseWarcDigest(h.Get("Warc-Payload-Digest"))
	if err != nil {
		return malformed("WARC-Payload-Digest: %v", err)
	}
	if pd != b.v.Digest {
		return fmt.Errorf("%w: payload digest differs from the index", ErrCorrupt)
	}
	b.Capture = Capture{URL: b.v.URL, Time: t.UTC(), Truncated: h.Get("Warc-Truncated")}
	if err := parseProvenance(h, &b.Capture); err != nil {
		return err
	}
	b.block = &hashCount{r: io.LimitReader(b.outer, blockLen), h: sha1.New()}
	b.inner = bufio.NewReaderSize(b.block, 16<<10)
	if _, ok := ScreenshotPage(b.v.URL); ok && h.Get("Warc-Type") != "resource" {
		return malformed("screenshot %q in a response record", b.v.URL)
	}
	if h.Get("Warc-Type") == "resource" {
		// No HTTP head: the block is the payload (screenshot.go).
		b.Resource = true
		if b.Status, b.Header, err = resourceFields(h); err != nil {
			return err
		}
	} else {
		status, fields, err := readHTTPHead(b.inner)
		if err != nil {
			return err
		}
		b.Status, b.Header = status, http.Header(fields)
	}
	b.Size = blockLen - (b.block.n - int64(b.inner.Buffered()))
	b.left, b.payload = b.Size, sha1.New()
	return nil
}

// Peek returns the payload's next n bytes (fewer at its end) without
// consuming them.
func (b *Body) Peek(n int) ([]byte, error) {
	p, err := b.inner.Peek(int(min(int64(n), b.left)))
	if err != nil && !errors.Is(err, io.EOF) {
		return p, err
	}
	return p, nil
}

// Read reads the payload. After its last byte it verifies the record
// (block and payload digests, the end of the gzip member) and returns
// io.EOF, or an error wrapping ErrCorrupt.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left == 0 {
		b.err = b.finish()
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.inner.Read(p)
	b.payload.Write(p[:n])
	b.left -= int64(n)
	switch {
	case err == io.EOF && b.left > 0:
		b.err = b.corrupt(malformed("truncated block"))
	case err != nil && err != io.EOF:
		b.err = b.corrupt(asCorrupt(err))
	}
	return n, b.err
}

// asCorrupt wraps a decompression or parse error with ErrCorrupt: the
// record is the store's own, read from its file.
func asCorrupt(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}

// finish checks the record once its payload is read: io.EOF if it holds.
// The decompressor verifies the member's or frame's checksum at its end.
func (b *Body) finish() error {
	if id.ID(b.payload.Sum(nil)) != b.v.Digest {
		return b.corrupt(fmt.Errorf("%w: payload digest mismatch", ErrCorrupt))
	}
	if id.ID(b.block.h.Sum(nil)) != b.wantB {
		return b.corrupt(fmt.Errorf("%w: block digest mismatch", ErrCorrupt))
	}
	// The record's end ("\r\n\r\n"), then the member's: its checksum.
	var tail [5]byte
	n, err := io.ReadFull(b.outer, tail[:])
	if n != 4 || string(tail[:4]) != "\r\n\r\n" || err != io.ErrUnexpectedEOF {
		return b.corrupt(fmt.Errorf("%w: trailing data or bad compression after the block: %v", ErrCorrupt, err))
	}
	return io.EOF
}

// corrupt counts and logs err, a damaged record, and returns it wrapped
// with the version's place.
func (b *Body) corrupt(err error) error {
	if errors.Is(err, ErrCorrupt) {
		b.s.corrupt.Add(1)
		b.s.log.Error("corrupt record", "file", b.v.File, "offset", b.v.Offset, "url", b.v.URL, "err", err)
	}
	return fmt.Errorf("archive body %s %s+%d: %w", b.v.URL, b.v.File, b.v.Offset, err)
}

// Close releases the body's decompressor and segment handle. It is safe
// to call twice.
func (b *Body) Close() error {
	if b.err == nil {
		b.err = errors.New("archive: body closed")
	}
	if b.f != nil {
		b.s.streams.release(b.f)
		b.f = nil
	}
	release := b.release
	if release == nil {
		return nil
	}
	b.release = nil
	return release()
}
