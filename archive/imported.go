package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/binread"
	"github.com/herod-archive/herod/internal/id"
)

// Imported records. A record a node did not fetch but read from a WARC,
// WACZ or ARC file another tool wrote (herod import) is stored as a
// response record like a crawled one, signed by the importing node, and
// carries three more fields that say so:
//
//	WARC-Herod-Imported-From:   sha256:<hex>, the SHA-256 of the source file
//	WARC-Herod-Imported-Record: the record's WARC-Record-ID in that file
//	                            (for an ARC record, arc:<offset>)
//	WARC-Herod-Imported-At:     when the importer read it (a WARC-Date)
//
// The record's WARC-Date stays the original capture date, and its peer
// (WARC-Herod-Peer) is the importer. An imported version is never shown
// as a crawl: its Version carries Imported, the banner and the CDX say
// "imported by <peer> from <file>", and its date is judged by the import
// time, not the capture time (WitnessRule.Date): a witness other than
// the importer must have held it within MaxWitnessDelay of Imported.At,
// and Imported.At must not precede the capture time. So an import cannot
// pass for a witnessed crawl (it says imported, whoever witnessed it),
// and a crawl cannot pass for an import without saying so: a record
// without these fields is a crawl and dated by its capture time. The
// owner of a URL accepts an import only signed by the node that sends it
// and dated now (node/importer).

// Import provenance header names.
const (
	HeaderImportedFrom   = "WARC-Herod-Imported-From"
	HeaderImportedRecord = "WARC-Herod-Imported-Record"
	HeaderImportedAt     = "WARC-Herod-Imported-At"
)

// Import is where an imported version came from.
type Import struct {
	// From is the source file's SHA-256 as "sha256:<64 hex>".
	From string `json:"from"`
	// Record is the record's id in that file: its WARC-Record-ID, or
	// arc:<offset> for an ARC record.
	Record string `json:"record,omitempty"`
	// At is when the importer read it.
	At time.Time `json:"at"`
}

// Errors of imported records.
var (
	// ErrNotImported reports a record offered as an import without the
	// import fields.
	ErrNotImported = errors.New("archive: not an imported record")
	// ErrBadImport reports import fields that do not hold together.
	ErrBadImport = errors.New("archive: bad import fields")
)

// maxImportField bounds the length of an import field's value.
const maxImportField = 512

// check reports import fields that do not hold together for a capture
// at t: a source that is not a SHA-256, an id too long, an import time
// before the capture.
func (im *Import) check(t time.Time) error {
	hex, ok := strings.CutPrefix(im.From, "sha256:")
	if !ok || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return fmt.Errorf("%w: source %q is not sha256:<64 hex>", ErrBadImport, im.From)
	}
	if len(im.Record) > maxImportField || strings.ContainsAny(im.Record, "\r\n") {
		return fmt.Errorf("%w: record id of %d bytes", ErrBadImport, len(im.Record))
	}
	if im.At.IsZero() || im.At.Before(t.Add(-MaxClockSkew)) {
		return fmt.Errorf("%w: imported at %s, before its capture %s", ErrBadImport, formatWarcDate(im.At), formatWarcDate(t))
	}
	return nil
}

// importHeaders returns the WARC fields of c's import, none for a crawl.
func importHeaders(c *Capture) []warcHeader {
	if c.Imported == nil {
		return nil
	}
	h := []warcHeader{{HeaderImportedFrom, c.Imported.From}}
	if c.Imported.Record != "" {
		h = append(h, warcHeader{HeaderImportedRecord, c.Imported.Record})
	}
	return append(h, warcHeader{HeaderImportedAt, formatWarcDate(c.Imported.At)})
}

// parseImported reads a record's import fields into c; a record with
// none is a crawl.
func parseImported(h interface{ Get(string) string }, c *Capture) error {
	from, rec, at := h.Get(HeaderImportedFrom), h.Get(HeaderImportedRecord), h.Get(HeaderImportedAt)
	if from == "" && rec == "" && at == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return malformed("%s %q", HeaderImportedAt, at)
	}
	im := &Import{From: from, Record: rec, At: t.UTC()}
	if err := im.check(c.Time); err != nil {
		return malformed("%v", err)
	}
	c.Imported = im
	return nil
}

// dateImport is WitnessRule.Date for an imported version: believed, as
// an import, when this store imported it, when a witness other than the
// importer held it within delay of its import time, or while the import
// is recent.
func (r WitnessRule) dateImport(v Version, ws []Witness, now time.Time, delay time.Duration) (Dating, []Witness) {
	var good []Witness
	for _, w := range ws {
		if w.Seen.Sub(v.Imported.At) <= delay && r.Check(v, w) == nil {
			good = append(good, w)
		}
	}
	slices.SortFunc(good, func(a, b Witness) int { return a.Seen.Compare(b.Seen) })
	switch {
	case r.Self != "" && v.Peer == r.Self, len(good) > 0, now.Sub(v.Imported.At) <= delay:
		return Imported, good
	}
	return Unwitnessed, nil
}

// EncodeImported returns c, a capture read from another tool's file, as
// the record the owner of its URL stores (AddImported): one gzip member
// holding a WARC/1.1 response record dated c.Time, with c.Imported's
// fields, signed by the store's signer. c.Imported.At is set to the
// store's clock when zero. It stores nothing.
func (s *Store) EncodeImported(c Capture) ([]byte, error) {
	if s.signer == nil {
		return nil, errors.New("archive encode import: the store signs nothing")
	}
	if c.Imported == nil {
		return nil, fmt.Errorf("archive encode import: %w", ErrNotImported)
	}
	im := *c.Imported
	if im.At.IsZero() {
		im.At = s.now()
	}
	im.At = im.At.UTC().Round(0)
	c.Imported, c.Peer, c.Signature, c.State = &im, "", nil, nil
	if err := checkCapture(&c); err != nil {
		return nil, fmt.Errorf("archive encode import: %w: %w", ErrBadCapture, err)
	}
	t := c.Time.UTC().Round(0)
	if err := im.check(t); err != nil {
		return nil, fmt.Errorf("archive encode import %s: %w", c.URL, err)
	}
	d := id.Sum(c.Body)
	head, block, err := responseBlock(&c)
	if err != nil {
		return nil, fmt.Errorf("archive encode import %s: %w: %w", c.URL, ErrBadCapture, err)
	}
	if err := sign(s.signer, &c, t, d, block); err != nil {
		return nil, fmt.Errorf("archive encode import %s: %w", c.URL, err)
	}
	plain, err := plainResponse(&c, t, d, head, block)
	if err != nil {
		return nil, fmt.Errorf("archive encode import %s: %w", c.URL, err)
	}
	var b bytes.Buffer
	if err := s.gz.compress(&b, plain); err != nil {
		return nil, fmt.Errorf("archive encode import %s: %w", c.URL, err)
	}
	return b.Bytes(), nil
}

// AddImported stores data, an imported record (EncodeImported) that the
// store's node owns, after verifying it as Import verifies a replica's
// record (framing, digests, the signature, a capture time not in the
// future, a peer not refused) and that it is an import (ErrNotImported)
// signed by sender when sender is not empty; admit, if not nil, then
// sees the version and may refuse it (its error is returned, wrapped). Unlike Import it names the
// version itself (its Seq, as Put does), and a version of the same URL,
// capture time and payload already held, crawled or imported, is the
// answer: it returns it with added false and stores nothing. A new
// version is offered to OnAdd's function, as Put's are, so that it
// reaches the replicas.
func (s *Store) AddImported(ctx context.Context, data []byte, sender string, admit func(Version) error) (Version, bool, error) {
	if err := ctx.Err(); err != nil {
		return Version{}, false, fmt.Errorf("archive add import: %w", err)
	}
	s.adding.Add(1)
	defer s.adding.Add(-1)
	if s.closed.Load() {
		return Version{}, false, errors.New("archive add import: store closed")
	}
	if err := s.failure(); err != nil {
		return Version{}, false, fmt.Errorf("archive add import: %w", err)
	}
	f, err := decodeMemberMax(data, nil, s.importBlock())
	if err == nil {
		err = s.checkProvenance(f)
	}
	c := &f.capture
	switch {
	case err != nil:
	case c.Imported == nil:
		err = ErrNotImported
	case sender != "" && c.Peer != sender:
		err = fmt.Errorf("%w: %w: signed by %s, sent by %s", ErrCorrupt, ErrUnsigned, c.Peer, sender)
	case c.Imported.At.After(s.now().Add(MaxClockSkew)):
		err = fmt.Errorf("%w: %w: imported at %s", ErrCorrupt, ErrFuture, formatWarcDate(c.Imported.At))
	}
	if err != nil {
		return Version{}, false, fmt.Errorf("archive add import: %w", err)
	}
	k := id.OfString(c.URL)
	v := Version{
		URL: c.URL, Key: k, Digest: f.digest, Day: s.DayOf(c.Time), Time: c.Time, Status: c.Status,
		ContentType: MediaType(c.Header.Get("Content-Type")),
		Length:      int64(len(c.Body)), Peer: c.Peer, Imported: c.Imported,
	}
	if admit != nil {
		if err := admit(v); err != nil {
			return Version{}, false, fmt.Errorf("archive add import %s: %w", v.URL, err)
		}
	}
	lk := &s.keyLocks[k[id.Size-1]]
	lk.Lock()
	defer lk.Unlock()
	if s.urlp.covers(v.URL, v.Time) {
		return Version{}, false, fmt.Errorf("archive add import %s: %w: %w", v.URL, ErrBadCapture, ErrPurged)
	}
	if have, err := s.versionAt(k, v.Time, v.Digest); err == nil {
		return have, false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return Version{}, false, fmt.Errorf("archive add import: %w", err)
	}
	_, err = s.newest(k)
	first := errors.Is(err, ErrNotFound)
	if err != nil && !first {
		return Version{}, false, fmt.Errorf("archive add import: %w", err)
	}
	if !first {
		if v.Seq, err = s.nextSeq(k, v.Digest, v.Day); err != nil {
			return Version{}, false, fmt.Errorf("archive add import: %w", err)
		}
	}
	giveUp, indexed := s.beginWrite(), false
	defer func() {
		if !indexed {
			giveUp()
		}
	}()
	seg, err := s.store(&v, &record{data: data})
	if err != nil {
		return Version{}, false, fmt.Errorf("archive add import %s: %w", v.URL, err)
	}
	w, err := s.ownWitness(v)
	if err != nil {
		s.log.Warn("archive add import: cannot witness", "url", v.URL, "err", err)
		w = nil
	}
	indexed = true // index ends the write, whatever it returns
	if err := s.index(v, seg, first, nil, w); err != nil {
		return Version{}, false, fmt.Errorf("archive add import: %w", err)
	}
	if fn := s.added.Load(); fn != nil {
		(*fn)(v)
	}
	return v, true, nil
}

// appendImport appends v's import, if any, to an index value, after the
// flags that say it follows (flagImported).
func appendImport(b []byte, im *Import) []byte {
	if im == nil {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(im.From)))
	b = append(b, im.From...)
	b = binary.AppendUvarint(b, uint64(len(im.Record)))
	b = append(b, im.Record...)
	return binary.AppendVarint(b, im.At.UnixNano())
}

// readImport reads the import part of an index value.
func readImport(r *binread.Reader) *Import {
	im := &Import{From: r.String(math.MaxInt), Record: r.String(math.MaxInt)}
	im.At = time.Unix(0, r.Varint()).UTC()
	return im
}
