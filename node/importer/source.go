package importer

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/herod-archive/herod/archive"
)

// Reading a source file. A file is a WARC (plain, gzip per record or
// whole, zstd per the WARC zstd convention, with or without a
// dictionary), an ARC (version 1, plain or gzip per record), or a WACZ
// (a zip whose archive/ folder holds WARCs, each read in turn). The
// format is told by the first bytes, never by the name. Records are
// read with the archive's own WARC reader (archive.ReadRecord: bounded
// lines, headers and blocks, fuzzed with the store). A record that does
// not parse is reported (item.err) at its place and reading goes on at
// the next record: the next gzip member of a gzip file, the next
// "WARC/1." of a plain one; a damaged zstd stream or a damaged
// record inside one gzip member holding the whole file ends that file.

// item is one record of a source, or the damage found in its place.
type item struct {
	where string          // "offset N", or "ENTRY offset N" in a WACZ
	rec   *archive.Record // a WARC record
	arc   *arcRecord      // or an ARC record
	err   error           // or why the record at where cannot be read
	// id and url name a damaged record when its header could be read.
	id, url string
}

// maxMember bounds the bytes one gzip member or one record may expand to.
const maxMember = 256 << 20

// gzip, zstd, skippable (zstd dictionary) and zip magic numbers.
var (
	magicGzip = []byte{0x1f, 0x8b, 0x08}
	magicZstd = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicDict = []byte{0x5d, 0x2a, 0x4d, 0x18}
	magicZip  = []byte("PK\x03\x04")
)

// eachFile reads every record of the file at p in order, calling fn with
// each; an error of fn ends the reading and is returned.
func eachFile(p string, fn func(item) error) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	head := make([]byte, 4)
	n, _ := f.ReadAt(head, 0)
	if bytes.HasPrefix(head[:n], magicZip) {
		return eachWACZ(f, fi.Size(), fn)
	}
	return eachStream(io.NewSectionReader(f, 0, fi.Size()), "", fn)
}

// eachWACZ reads the WARCs under archive/ in a WACZ, in the zip's order.
func eachWACZ(f *os.File, size int64, fn func(item) error) error {
	zr, err := zip.NewReader(f, size)
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	found := false
	for _, e := range zr.File {
		name := e.Name
		if !strings.HasPrefix(name, "archive/") || e.FileInfo().IsDir() {
			continue
		}
		if b := path.Base(name); !strings.Contains(b, ".warc") && !strings.Contains(b, ".arc") {
			continue
		}
		found = true
		var sr *io.SectionReader
		if off, err := e.DataOffset(); err == nil && e.Method == zip.Store {
			sr = io.NewSectionReader(f, off, int64(e.UncompressedSize64))
		} else {
			// A deflated entry (the WACZ spec stores them): copied to a
			// temporary file so that a damaged member can be skipped.
			tmp, err := spoolEntry(e)
			if err != nil {
				return fmt.Errorf("wacz %s: %w", name, err)
			}
			defer os.Remove(tmp.Name())
			defer tmp.Close()
			fi, err := tmp.Stat()
			if err != nil {
				return err
			}
			sr = io.NewSectionReader(tmp, 0, fi.Size())
		}
		if err := eachStream(sr, name+" ", fn); err != nil {
			return err
		}
	}
	if !found {
		return errors.New("wacz: no WARC under archive/")
	}
	return nil
}

func spoolEntry(e *zip.File) (*os.File, error) {
	rc, err := e.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tmp, err := os.CreateTemp("", "herod-wacz-*")
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(tmp, rc); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// eachStream reads one WARC or ARC stream, plain or compressed.
func eachStream(sr *io.SectionReader, prefix string, fn func(item) error) error {
	head := make([]byte, 4)
	n, _ := sr.ReadAt(head, 0)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, magicGzip):
		return eachGzip(sr, prefix, fn)
	case bytes.HasPrefix(head, magicZstd), bytes.HasPrefix(head, magicDict):
		return eachZstd(sr, prefix, fn)
	}
	return eachPlain(sr, prefix, fn)
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// byteCounter is a bufio.Reader that counts what is consumed from it,
// so that a gzip reader (which reads an io.ByteReader exactly to the end
// of its member) leaves it at the next member.
type byteCounter struct {
	br  *bufio.Reader
	off int64
}

func (b *byteCounter) Read(p []byte) (int, error) {
	n, err := b.br.Read(p)
	b.off += int64(n)
	return n, err
}

func (b *byteCounter) ReadByte() (byte, error) {
	c, err := b.br.ReadByte()
	if err == nil {
		b.off++
	}
	return c, err
}

// eachGzip reads a gzip file member by member; a member that does not
// decompress or parse is reported and skipped to the next gzip header.
func eachGzip(sr *io.SectionReader, prefix string, fn func(item) error) error {
	var off int64
	var zr gzip.Reader
	for off < sr.Size() {
		bc := &byteCounter{br: bufio.NewReaderSize(io.NewSectionReader(sr, off, sr.Size()-off), 64<<10), off: off}
		start := off
		for {
			start = bc.off
			if _, err := bc.br.Peek(1); err == io.EOF {
				return nil
			}
			where := fmt.Sprintf("%soffset %d", prefix, start)
			err := zr.Reset(bc)
			if err == nil {
				zr.Multistream(false)
				err = eachMember(&zr, where, fn)
			}
			if err == nil {
				continue
			}
			var stop stopErr
			if errors.As(err, &stop) {
				return stop.err
			}
			id, u := salvage(sr, start)
			if ferr := fn(item{where: where, err: err, id: id, url: u}); ferr != nil {
				return ferr
			}
			break
		}
		next, err := nextMagic(sr, start+1)
		if err != nil {
			return err
		}
		off = next
	}
	return nil
}

// salvage returns the record id and target URI of the damaged gzip
// member at off, as far as its first bytes decompress.
func salvage(sr *io.SectionReader, off int64) (id, uri string) {
	zr, err := gzip.NewReader(io.NewSectionReader(sr, off, sr.Size()-off))
	if err != nil {
		return "", ""
	}
	head := make([]byte, 8<<10)
	n, _ := io.ReadFull(zr, head)
	for _, l := range strings.Split(string(head[:n]), "\n") {
		name, v, ok := strings.Cut(strings.TrimRight(l, "\r"), ":")
		switch {
		case !ok:
		case strings.EqualFold(name, "WARC-Record-ID"):
			id = strings.TrimSpace(v)
		case strings.EqualFold(name, "WARC-Target-URI"):
			uri = strings.TrimSpace(v)
		}
		if l == "\r" || l == "" {
			break
		}
	}
	return id, uri
}

// stopErr carries an error of fn out of a member's reading.
type stopErr struct{ err error }

func (s stopErr) Error() string { return s.err.Error() }

// eachMember reads the records of one gzip member (one, as a rule; a
// whole file compressed as one member holds them all).
func eachMember(zr *gzip.Reader, where string, fn func(item) error) error {
	br := bufio.NewReaderSize(io.LimitReader(zr, maxMember+1), 64<<10)
	for i := 0; ; i++ {
		w := where
		if i > 0 {
			w = fmt.Sprintf("%s, record %d of the member", where, i+1)
		}
		it, err := readOne(br, w)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if ferr := fn(it); ferr != nil {
			return stopErr{ferr}
		}
	}
	// Drain the member so that its CRC is checked.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	return nil
}

// readOne reads one WARC or ARC record from br; io.EOF at the end.
func readOne(br *bufio.Reader, where string) (item, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return item{}, io.EOF
		}
		if b[0] != '\r' && b[0] != '\n' {
			break
		}
		br.ReadByte() // blank lines between records
	}
	p, _ := br.Peek(5)
	if string(p) == "WARC/" {
		rec, err := archive.ReadRecord(br)
		if err != nil {
			return item{}, err
		}
		return item{where: where, rec: rec}, nil
	}
	a, err := readARC(br)
	if err != nil {
		return item{}, err
	}
	return item{where: where, arc: a}, nil
}

// nextMagic returns the offset of the next gzip header at or after off,
// the size of sr if there is none.
func nextMagic(sr *io.SectionReader, off int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for off < sr.Size() {
		n, err := sr.ReadAt(buf, off)
		if n == 0 && err != nil {
			break
		}
		if i := bytes.Index(buf[:n], magicGzip); i >= 0 {
			return off + int64(i), nil
		}
		if n < len(magicGzip) {
			break
		}
		off += int64(n - len(magicGzip) + 1)
	}
	return sr.Size(), nil
}

// eachPlain reads an uncompressed stream; a record that does not parse
// is reported and reading goes on at the next "WARC/1." after its start.
func eachPlain(sr *io.SectionReader, prefix string, fn func(item) error) error {
	var off int64
	for off < sr.Size() {
		cr := &countReader{r: io.NewSectionReader(sr, off, sr.Size()-off)}
		br := bufio.NewReaderSize(cr, 64<<10)
		var start int64
		for {
			start = off + cr.n - int64(br.Buffered())
			where := fmt.Sprintf("%soffset %d", prefix, start)
			it, err := readOne(br, where)
			if err == io.EOF {
				return nil
			}
			if err == nil {
				if ferr := fn(it); ferr != nil {
					return ferr
				}
				continue
			}
			if ferr := fn(item{where: where, err: err}); ferr != nil {
				return ferr
			}
			break
		}
		off = nextRecord(sr, start+1)
	}
	return nil
}

// nextRecord returns the offset of the next "WARC/1." at or after off
// (a record cut short is not followed by a line end), the size of sr if
// there is none.
func nextRecord(sr *io.SectionReader, off int64) int64 {
	const mark = "WARC/1."
	buf := make([]byte, 64<<10)
	for off < sr.Size() {
		n, _ := sr.ReadAt(buf, off)
		if n < len(mark) {
			break
		}
		if i := bytes.Index(buf[:n], []byte(mark)); i >= 0 {
			return off + int64(i)
		}
		off += int64(n - len(mark) + 1)
	}
	return sr.Size()
}

// eachZstd reads a zstd stream (frames of records), after the
// dictionary's skippable frame if it starts with one.
func eachZstd(sr *io.SectionReader, prefix string, fn func(item) error) error {
	var opts []zstd.DOption
	var start int64
	hdr := make([]byte, 8)
	if _, err := sr.ReadAt(hdr, 0); err == nil && bytes.HasPrefix(hdr, magicDict) {
		size := int64(binary.LittleEndian.Uint32(hdr[4:]))
		if size > 16<<20 {
			return fmt.Errorf("zstd: dictionary of %d bytes", size)
		}
		dict := make([]byte, size)
		if _, err := sr.ReadAt(dict, 8); err != nil {
			return fmt.Errorf("zstd: dictionary: %w", err)
		}
		if bytes.HasPrefix(dict, magicZstd) {
			d, err := zstd.NewReader(nil)
			if err != nil {
				return err
			}
			dict, err = d.DecodeAll(dict, nil)
			d.Close()
			if err != nil {
				return fmt.Errorf("zstd: dictionary: %w", err)
			}
		}
		if bytes.HasPrefix(dict, []byte{0x37, 0xa4, 0x30, 0xec}) {
			opts = append(opts, zstd.WithDecoderDicts(dict))
		} else {
			opts = append(opts, zstd.WithDecoderDictRaw(0, dict))
		}
		start = 8 + size
	}
	opts = append(opts, zstd.WithDecoderMaxMemory(2*maxMember), zstd.WithDecoderConcurrency(1))
	zd, err := zstd.NewReader(io.NewSectionReader(sr, start, sr.Size()-start), opts...)
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	defer zd.Close()
	cr := &countReader{r: zd}
	br := bufio.NewReaderSize(cr, 64<<10)
	for {
		where := fmt.Sprintf("%sdecompressed offset %d", prefix, cr.n-int64(br.Buffered()))
		it, err := readOne(br, where)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// The stream cannot be resynchronized: the rest is lost.
			return fn(item{where: where, err: fmt.Errorf("%w (the rest of this zstd stream is not read)", err)})
		}
		if err := fn(it); err != nil {
			return err
		}
	}
}
