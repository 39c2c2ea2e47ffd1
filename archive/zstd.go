package archive

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"

	"github.com/herod-archive/herod/internal/id"
)

// Dictionary segments. Pages of one site share most of their bytes
// (templates, navigation, scripts), but a record compressed alone cannot
// refer to another record. Once the store has written DictSamples records
// it trains a zstd dictionary on them in the background (dictTrainer:
// about a second of CPU for 300 real pages, 2-3 s for made-up ones;
// writes go on meanwhile) and from the next record after it is ready on
// appends to segments named <id>.warc.zst, laid out as the WARC zstd
// proposal of the IIPC has it:
//
//	skippable frame 0x184D2A5D holding the dictionary (itself zstd-compressed)
//	one zstd frame per record, compressed with that dictionary
//
// A segment is thus readable alone. Segments written before the
// dictionary (and stores with DictSamples < 0) stay gzip members in
// <id>.warc.gz. The dictionary is trained once per store and kept
// (dicts.go): a node recrawls the same URLs every day, so its first
// records stay representative. Replicas store a record as its sender
// stored it, in a segment of the sender's dictionary (replica.go);
// gateway reads and exports carry records as gzip members, which every
// WARC reader reads: a record of a .warc.zst segment is transcoded when
// it leaves the store that way (ReadFile, Export).

// DefaultDictSamples is Options.DictSamples when zero.
const DefaultDictSamples = 300

// Dictionary training limits: each sample is cut to maxSampleBytes, the
// samples stop at maxSampleTotal bytes (training time grows with them:
// 0.4 s for 2 MiB of real pages, 1 s for made-up ones; 4.8 MiB would
// pack real pages 3% smaller for 1-2.5 s), and the dictionary holds at
// most maxDictBytes. Training that fails (too few or too uniform
// samples) is tried again on new samples (twice as many records, within
// maxSampleTotal), at most dictTries times.
const (
	maxSampleBytes = 16 << 10
	maxSampleTotal = 2 << 20
	maxDictBytes   = 64 << 10
	dictTries      = 4
)

// Frame magics (RFC 8878 and the WARC zstd proposal).
const (
	zstdMagic      = 0xFD2FB528
	dictFrameMagic = 0x184D2A5D
)

// zstExt is the extension of dictionary segments.
const zstExt = ".warc.zst"

// plainDecoder decodes zstd frames without a dictionary (the dictionary
// frames).
var (
	plainOnce    sync.Once
	plainDecoder *zstd.Decoder
)

func plainDecoderOf() *zstd.Decoder {
	plainOnce.Do(func() {
		plainDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(4*maxDictBytes))
	})
	return plainDecoder
}

// compressDict compresses a dictionary for its frame at zstd's best
// level. The encoder is made for the call and dropped: its tables take
// 34 MB, which a store that kept it held all its life for the few
// dictionaries it ever frames. It runs once for a dictionary the store
// trains or receives (zdict.frame); one read from a segment keeps that
// segment's frame.
func compressDict(raw []byte) []byte {
	// Options constant and valid: cannot fail.
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	defer enc.Close()
	return enc.EncodeAll(raw, nil)
}

// zdict is a dictionary with the encoder and decoders that use it. All
// are safe for concurrent use (EncodeAll and DecodeAll). None is ever
// closed: used only through EncodeAll and DecodeAll they start no
// goroutines, and a read may still be decoding when the store closes, so
// the garbage collector frees them. Records are compressed at zstd's
// fastest level: with the dictionary it packs real pages to 0.20 of their
// bytes at 0.6 of gzip 6's CPU (the default level: 0.19 at 1.3×;
// BenchmarkZstdDict). The encoder is built on first use: a peer's
// dictionary (replica.go) only decodes.
type zdict struct {
	id   uint32
	hash id.ID  // SHA-1 of raw: what a peer names it by (DictRef)
	raw  []byte // the dictionary, zstd format
	dec  *zstd.Decoder

	frameOnce sync.Once
	frameData []byte // see frame

	encOnce sync.Once
	enc     *zstd.Encoder
	impOnce sync.Once
	imp     *zstd.Decoder // bounded to a peer's record (importDecoder)
	streams sync.Pool     // of *zstd.Decoder (streamDecoder)
}

// newZdict prepares the zstd-format dictionary raw for use.
func newZdict(raw []byte) (*zdict, error) {
	info, err := zstd.InspectDictionary(raw)
	if err != nil {
		return nil, fmt.Errorf("zstd dictionary: %w", err)
	}
	if info.ID() == 0 {
		return nil, errors.New("zstd dictionary without an id")
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDicts(raw), zstd.WithDecoderMaxMemory(2*maxBlock))
	if err != nil {
		return nil, fmt.Errorf("zstd dictionary: %w", err)
	}
	return &zdict{id: info.ID(), hash: id.Sum(raw), raw: raw, dec: dec}, nil
}

// frame returns the skippable frame that starts each segment using zd:
// the one the store read from a segment (useFrame), else zd compressed
// on first call (compressDict, a second or two of CPU and 34 MB for the
// call). Opening a store frames nothing but a dictionary it keeps that
// no segment holds; one trained or received is framed as it comes
// (trainDict, keepDict).
func (zd *zdict) frame() []byte {
	zd.frameOnce.Do(func() {
		body := compressDict(zd.raw)
		f := binary.LittleEndian.AppendUint32(nil, dictFrameMagic)
		f = binary.LittleEndian.AppendUint32(f, uint32(len(body)))
		zd.frameData = append(f, body...)
	})
	return zd.frameData
}

// useFrame makes frame, which readDictFrame read from a segment and
// found to hold zd's dictionary, zd's frame unless it has one already.
func (zd *zdict) useFrame(frame []byte) {
	zd.frameOnce.Do(func() { zd.frameData = frame })
}

// ref returns the name peers know zd by.
func (zd *zdict) ref() DictRef { return DictRef{ID: zd.id, Hash: zd.hash} }

// streamWindow is the window of records' zstd frames. A record of at
// most streamWindow bytes is one single-segment frame (its window is its
// content); a longer one keeps a window of streamWindow, so a reader
// streams it (OpenBody) holding that much history rather than the whole
// record. At zstd's fastest level the window costs little: 8.4 MB of
// pages in one frame take 0.2954 of their bytes with this window, 0.2941
// with 8 MiB.
const streamWindow = 256 << 10

// encoder returns the encoder of records for zd's segments.
func (zd *zdict) encoder() *zstd.Encoder {
	zd.encOnce.Do(func() {
		// Options checked by newZdict's decoder: cannot fail.
		zd.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderDict(zd.raw), zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithWindowSize(streamWindow))
	})
	return zd.enc
}

// streamDecoder returns a decoder of zd's frames for reading one record
// as a stream from r: synchronous (no goroutines), its history bounded
// to streamWindow. Give it back with putStreamDecoder.
func (zd *zdict) streamDecoder(r io.Reader) (*zstd.Decoder, error) {
	if d, ok := zd.streams.Get().(*zstd.Decoder); ok {
		if err := d.Reset(r); err != nil {
			return nil, fmt.Errorf("zstd stream: %w", err)
		}
		return d, nil
	}
	d, err := zstd.NewReader(r, zstd.WithDecoderDicts(zd.raw), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(streamWindow))
	if err != nil {
		return nil, fmt.Errorf("zstd stream: %w", err)
	}
	return d, nil
}

// putStreamDecoder releases d's input and keeps it for the next stream.
func (zd *zdict) putStreamDecoder(d *zstd.Decoder) {
	if d.Reset(nil) == nil {
		zd.streams.Put(d)
	}
}

// importDecoder returns a decoder whose output stops at max bytes, for
// records from peers (the store's bound is the same on every call).
func (zd *zdict) importDecoder(max int64) *zstd.Decoder {
	zd.impOnce.Do(func() {
		zd.imp, _ = zstd.NewReader(nil, zstd.WithDecoderDicts(zd.raw), zstd.WithDecoderMaxMemory(uint64(max)),
			zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	})
	return zd.imp
}

// readDictFrame reads the dictionary frame at the start of r (of size
// bytes) and returns the dictionary and the whole frame as read (the
// segment's first record starts at its length).
func readDictFrame(r io.ReaderAt, size int64) (raw, frame []byte, err error) {
	if size < 8 {
		return nil, nil, fmt.Errorf("%w: no dictionary frame", ErrCorrupt)
	}
	h := make([]byte, 8)
	if _, err := r.ReadAt(h, 0); err != nil {
		return nil, nil, err
	}
	n := int64(binary.LittleEndian.Uint32(h[4:]))
	if binary.LittleEndian.Uint32(h[:4]) != dictFrameMagic || n > 4*maxDictBytes || 8+n > size {
		return nil, nil, fmt.Errorf("%w: bad dictionary frame", ErrCorrupt)
	}
	frame = make([]byte, 8+n)
	copy(frame, h)
	if _, err := r.ReadAt(frame[8:], 8); err != nil {
		return nil, nil, err
	}
	raw = frame[8:]
	if len(raw) >= 4 && binary.LittleEndian.Uint32(raw) == zstdMagic {
		if raw, err = plainDecoderOf().DecodeAll(raw, nil); err != nil {
			return nil, nil, fmt.Errorf("%w: dictionary frame: %v", ErrCorrupt, err)
		}
	}
	return raw, frame, nil
}

// frameHead is what the header of a zstd frame states (RFC 8878
// §3.1.1.1).
type frameHead struct {
	single bool   // single segment: the window is the whole content
	window uint64 // history a decoder keeps: the content size when single
	size   uint64 // content size, if sized
	sized  bool
	dictID uint32 // 0: none
	check  bool   // a content checksum follows the last block
	n      int    // header length, magic included
}

// maxFrameHead is the longest zstd frame header: magic, descriptor,
// window, dictionary id (≤ 4), content size (≤ 8).
const maxFrameHead = 18

// parseFrameHead reads the header of the zstd frame at the start of h.
func parseFrameHead(h []byte) (frameHead, error) {
	if len(h) < 6 || binary.LittleEndian.Uint32(h) != zstdMagic {
		return frameHead{}, errors.New("no frame")
	}
	fhd := h[4]
	if fhd&0x08 != 0 {
		return frameHead{}, errors.New("reserved bit set")
	}
	f := frameHead{single: fhd&0x20 != 0, check: fhd&0x04 != 0}
	idLen := [4]int{0, 1, 2, 4}[fhd&3]
	fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if fcsLen == 0 && f.single {
		fcsLen = 1
	}
	pos := 5
	if !f.single {
		wd := h[5]
		base := uint64(1) << (10 + wd>>3)
		f.window = base + base/8*uint64(wd&7)
		pos++
	}
	if pos+idLen+fcsLen > len(h) {
		return frameHead{}, errors.New("short header")
	}
	for i := range idLen {
		f.dictID |= uint32(h[pos+i]) << (8 * i)
	}
	pos += idLen
	for i := range fcsLen {
		f.size |= uint64(h[pos+i]) << (8 * i)
	}
	if fcsLen == 2 {
		f.size += 256
	}
	f.sized, f.n = fcsLen > 0, pos+fcsLen
	if f.single {
		f.window = f.size
	}
	return f, nil
}

// zstdFrameEnd returns the end of the zstd frame that starts at off in r,
// which holds size bytes, by walking its block headers (RFC 8878 §3.1.1),
// and the frame's dictionary id (0 if none). It decodes nothing.
func zstdFrameEnd(r io.ReaderAt, off, size int64) (int64, uint32, error) {
	bad := func(what string) (int64, uint32, error) {
		return 0, 0, fmt.Errorf("%w: zstd frame at %d: %s", ErrCorrupt, off, what)
	}
	var h [maxFrameHead]byte
	k, _ := r.ReadAt(h[:], off)
	fh, err := parseFrameHead(h[:k])
	if err != nil {
		return bad(err.Error())
	}
	end := off + int64(fh.n)
	var bh [3]byte
	for {
		if end+3 > size {
			return bad("truncated")
		}
		if _, err := r.ReadAt(bh[:], end); err != nil {
			return 0, 0, err
		}
		v := uint32(bh[0]) | uint32(bh[1])<<8 | uint32(bh[2])<<16
		last, typ, n := v&1 != 0, (v>>1)&3, int64(v>>3)
		switch typ {
		case 1: // RLE: one byte repeated n times
			n = 1
		case 3:
			return bad("reserved block type")
		}
		if n > 128<<10 {
			return bad("block too large")
		}
		end += 3 + n
		if last {
			break
		}
	}
	if fh.check {
		end += 4 // content checksum
	}
	if end > size {
		return bad("truncated")
	}
	return end, fh.dictID, nil
}

// decodeFrame reads data as exactly one zstd frame compressed with zd,
// holding one WARC response record, and verifies it as decodeMember
// does; the uncompressed record is appended to raw if not nil.
func decodeFrame(zd *zdict, data []byte, raw *bytes.Buffer) (*decodedFile, error) {
	plain, err := frameBytes(zd, zd.dec, data)
	if err != nil {
		return nil, err
	}
	if raw != nil {
		raw.Write(plain)
	}
	return decodePlain(plain)
}

// decodeFrameMax is decodeFrame for a frame from a peer: its output
// stops at maxBlock plus MaxHead (a frame declaring more is refused
// before anything is allocated; zstd blocks are at most 128 KiB, so one
// that expands to much is cut within a block of the bound), and the
// record's block at maxBlock. It returns the uncompressed record too,
// decoded into buf (an importBuf): the record, its capture's body and
// head included, holds buf's bytes until the caller releases it.
func decodeFrameMax(zd *zdict, data []byte, maxBlock int64, buf *importBuf) (*decodedFile, []byte, error) {
	// A frame that states its size (herod's always do) is decoded into
	// one buffer of that size; without it, the output would grow by
	// copies to the bound.
	n, ok := frameContentSize(data)
	switch {
	case !ok:
		return nil, nil, fmt.Errorf("%w: zstd frame without its content size", ErrCorrupt)
	case n > uint64(maxBlock+MaxHead):
		return nil, nil, fmt.Errorf("%w: zstd frame of %d bytes, more than %d", ErrCorrupt, n, maxBlock+MaxHead)
	}
	plain, err := frameBytesTo(zd, zd.importDecoder(maxBlock+MaxHead), data, buf.take(int(n)))
	if err != nil {
		return nil, nil, err
	}
	rec, err := recordIn(plain, min(maxBlock, int64(len(plain))))
	if err != nil {
		return nil, nil, err
	}
	f, err := decodeResponse(rec)
	return f, plain, err
}

// recordIn is readOnlyMax for a record held whole in plain: the fields
// are parsed as readRecord parses them, and the block, at most max
// bytes, is the slice of plain that holds it rather than a copy (which
// was a tenth of a replica's import). Nothing may follow the record's
// trailer.
func recordIn(plain []byte, max int64) (*Record, error) {
	d := readerPool.Get().(*memberReader)
	defer readerPool.Put(d)
	src := bytes.NewReader(plain)
	br := d.br
	br.Reset(src)
	defer br.Reset(nil)
	line, err := readLine(br)
	for err == nil && line == "" { // as readRecord: blank lines before the record
		line, err = readLine(br)
	}
	if err == io.EOF {
		return nil, malformed("empty file")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	h, n, err := readHead(br, line, max)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return nil, err
	}
	at := int64(len(plain)) - int64(src.Len()) - int64(br.Buffered()) // the block's start
	switch end := at + n; {
	case end > int64(len(plain)):
		return nil, malformed("truncated block: %v", io.ErrUnexpectedEOF)
	case end+4 > int64(len(plain)) || string(plain[end:end+4]) != "\r\n\r\n":
		return nil, malformed("missing record trailer")
	case end+4 != int64(len(plain)):
		return nil, fmt.Errorf("%w: trailing data or bad compression: %d bytes after the record", ErrCorrupt, int64(len(plain))-end-4)
	}
	return &Record{Version: line, Header: h, Block: plain[at : at+n : at+n]}, nil
}

// frameContentSize returns the content size the header of the zstd
// frame data states, ok false if it states none or is too short to tell.
func frameContentSize(data []byte) (n uint64, ok bool) {
	fh, err := parseFrameHead(data)
	return fh.size, err == nil && fh.sized
}

// frameBytes checks that data is exactly one zstd frame of zd and
// decodes it with dec.
func frameBytes(zd *zdict, dec *zstd.Decoder, data []byte) ([]byte, error) {
	return frameBytesTo(zd, dec, data, nil)
}

// frameBytesTo is frameBytes decoding into dst's capacity (a new buffer
// if it does not fit).
func frameBytesTo(zd *zdict, dec *zstd.Decoder, data, dst []byte) ([]byte, error) {
	end, dictID, err := zstdFrameEnd(bytes.NewReader(data), 0, int64(len(data)))
	if err != nil {
		return nil, err
	}
	if end != int64(len(data)) {
		return nil, fmt.Errorf("%w: %d bytes after the zstd frame", ErrCorrupt, int64(len(data))-end)
	}
	if dictID != zd.id {
		return nil, fmt.Errorf("%w: zstd frame of dictionary %d, want %d", ErrCorrupt, dictID, zd.id)
	}
	plain, err := dec.DecodeAll(data, dst[:0])
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
	}
	return plain, nil
}

// dictTrainer collects the first records the store writes and trains the
// store's dictionary on them, once, in the background: writes go on
// meanwhile (as gzip members, or with the dictionary the store had) and
// use the new dictionary from the append after it is ready. Training
// takes about a second of CPU for 300 real pages (8-15 s of wall time on
// a loaded machine); a store that waited for it stalled every write, and
// the replication push behind them, that long.
type dictTrainer struct {
	log  *slog.Logger
	done func(*zdict) error // called with the trained dictionary, on the training goroutine

	off      atomic.Bool // trained, disabled or given up
	mu       sync.Mutex  // guards the fields below
	training bool        // a training goroutine runs: offers are not kept
	want     int         // samples to collect
	bytes    int         // bytes collected
	tries    int
	samples  [][]byte
	tried    map[id.ID]bool  // peers' dictionaries considered for adoption
	got      string          // "trained" or "adopted" once done (Stats.Dictionary)
	waitLeft int             // offers still to wait for a peer's dictionary once the samples are complete (Options.DictWait)
	peers    func() []*zdict // the peers' dictionaries the store holds (adopt.go)
	wg       sync.WaitGroup  // the training (or adopting) goroutine
}

// collecting reports whether the trainer would keep a sample of the next
// record offered: no dictionary yet, none training, samples not
// complete. An importer decompresses a gzip member into a buffer of its
// own only then (a joiner waiting for a peer's dictionary with its
// samples complete offers nil).
func (t *dictTrainer) collecting() bool {
	if t.off.Load() {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.training && len(t.samples) < t.want && t.bytes < maxSampleTotal
}

// offer hands the trainer an uncompressed record; it keeps a copy (of at
// most maxSampleBytes) while it collects. A nil record, from an importer
// that did not keep the record's bytes, counts as an offer but adds no
// sample. The offer that completes the
// samples (want records, or maxSampleTotal bytes), or with
// Options.DictWait the one that many offers later, starts the training
// on a goroutine of its own and returns at once.
func (t *dictTrainer) offer(plain []byte) {
	if t.off.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.off.Load() || t.training {
		return
	}
	if len(t.samples) < t.want && t.bytes < maxSampleTotal {
		if plain == nil {
			return // collecting again (a training failed): no sample in this offer
		}
		sample := bytes.Clone(plain[:min(len(plain), maxSampleBytes)])
		t.samples = append(t.samples, sample)
		t.bytes += len(sample)
		if len(t.samples) < t.want && t.bytes < maxSampleTotal {
			return
		}
	}
	if t.waitLeft > 0 {
		t.waitLeft-- // a peer's dictionary may still come (consider)
		return
	}
	samples := t.samples
	t.samples, t.bytes, t.training = nil, 0, true
	t.wg.Add(1)
	go t.adoptOrTrain(samples) // adopt.go
}

// train trains a dictionary on samples (peers: the peers' dictionaries
// held that did not fit them, for the log) and hands it to done; a failure
// makes the trainer collect twice as many samples (within
// maxSampleTotal), dictTries times at most.
func (t *dictTrainer) train(samples [][]byte, peers int) {
	defer t.wg.Done()
	start := time.Now()
	zd, err := trainFunc(samples)
	if err == nil {
		if err = t.done(zd); err == nil {
			t.log.Info("trained the segments' zstd dictionary", "samples", len(samples), "id", zd.id,
				"frame", len(zd.frame()), "took", time.Since(start), "peers_not_fitting", peers)
			t.mu.Lock()
			t.got = "trained"
			t.mu.Unlock()
			t.off.Store(true)
			return
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.training = false
	if errors.Is(err, errStoreClosed) {
		return
	}
	if t.tries++; t.tries >= dictTries {
		t.log.Warn("no zstd dictionary: segments stay gzip", "samples", len(samples), "err", err)
		t.off.Store(true)
		return
	}
	t.log.Warn("zstd dictionary training failed; collecting more samples", "samples", len(samples), "err", err)
	t.want *= 2
}

// how returns how the store got its dictionary: "trained", "adopted" or
// "" (Stats.Dictionary).
func (t *dictTrainer) how() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.got
}

// wait returns once no training runs.
func (t *dictTrainer) wait() { t.wg.Wait() }

// trainFunc is trainDict; tests hold a training back through it.
var trainFunc = trainDict

// trainDict builds a dictionary from samples, with a random id from the
// range the zstd format leaves to users ([32768, 2^31)).
func trainDict(samples [][]byte) (*zdict, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<31-32768))
	if err != nil {
		return nil, err
	}
	// Tables for the level records use; compatible with zstd <= 1.5.5
	// decoders, which other WARC readers may link.
	raw, err := dict.BuildZstdDict(samples, dict.Options{
		MaxDictSize: maxDictBytes, HashBytes: 8, ZstdDictID: uint32(32768 + n.Int64()),
		ZstdLevel: zstd.SpeedFastest, ZstdDictCompat: true,
	})
	if err != nil {
		return nil, fmt.Errorf("train zstd dictionary: %w", err)
	}
	zd, err := newZdict(raw)
	if err != nil {
		return nil, err
	}
	zd.frame() // here, in the trainer's goroutine: rollLocked needs it
	return zd, nil
}
