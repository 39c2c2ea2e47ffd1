package replicate

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
)

// Peer is what Sync asks of the replica it compares with: sums, names and
// bytes of the files in a ring range (a, b] (a == b: the whole ring).
// *archive.Store implements it, and so does *Client for a remote replica.
type Peer interface {
	RangeSum(ctx context.Context, a, b id.ID) (archive.DirSum, error)
	Entries(ctx context.Context, a, b id.ID) ([]archive.Entry, error)
	ReadFile(ctx context.Context, e archive.Entry) ([]byte, error)
}

// Local is the replica Sync fills: a Peer that also imports (and
// verifies) files, and adds the dictionaries of the zstd records it is
// sent (verifying each against its name). Import must be safe for
// concurrent use: Sync imports the records of a batch at once.
// *archive.Store implements it.
type Local interface {
	Peer
	Import(ctx context.Context, name string, data []byte) (archive.Version, bool, error)
	AddDictionary(ref archive.DictRef, raw []byte) error
}

// CondImporter is a Local that verifies a record as Import does and then
// lets its caller decide, from the version the record names, whether to
// store it (archive.Store.ImportIf): one decoding and one signature
// check where a check followed by Import takes two. A record not taken
// is stored nowhere and returns its version with an error wrapping
// archive.ErrNotTaken.
type CondImporter interface {
	ImportIf(ctx context.Context, name string, data []byte, take func(archive.Version) bool) (archive.Version, bool, error)
}

var _ CondImporter = (*archive.Store)(nil)

// DictPeer is a Peer that sends the dictionary of a zstd record it sent
// (*Client, given a source with WithDictionaries): a record Local refuses
// for lacking its dictionary (archive.MissingDictError) is imported
// again once the dictionary is added.
type DictPeer interface {
	Dictionary(ctx context.Context, ref archive.DictRef) ([]byte, error)
}

// Source is what a Server answers from: sums, a listing that stops at its
// bound (so that one request for the whole ring costs O(MaxEntries), not
// O(archive)), and bytes. *archive.Store implements it.
type Source interface {
	RangeSum(ctx context.Context, a, b id.ID) (archive.DirSum, error)
	// EntriesUpTo lists (a, b] like Peer.Entries, but returns an error
	// (wrapping archive.ErrTooMany) as soon as it meets the entry after
	// the max-th, having scanned no further.
	EntriesUpTo(ctx context.Context, a, b id.ID, max int) ([]archive.Entry, error)
	// ReadFile returns a record as one gzip member.
	ReadFile(ctx context.Context, e archive.Entry) ([]byte, error)
	// ReadStored returns a record as it is stored.
	ReadStored(ctx context.Context, e archive.Entry) ([]byte, error)
	// ReadFileWithin and ReadStoredWithin are ReadFile and ReadStored as
	// the server answers OpRead, OpReadBatch and OpReadStored with them:
	// they ask room for the record's stored size before they read it and
	// return an error wrapping archive.ErrNoRoom, having read nothing,
	// when it refuses (archive.Store.ReadFileWithin).
	ReadFileWithin(ctx context.Context, e archive.Entry, room func(n int64) bool) ([]byte, error)
	ReadStoredWithin(ctx context.Context, e archive.Entry, room func(n int64) bool) ([]byte, error)
}

// BatchReader is a Peer that can send many records in one round trip;
// Sync uses it when the peer has it (*Client does).
type BatchReader interface {
	ReadFiles(ctx context.Context, es []archive.Entry) ([]Fetched, error)
}

var (
	_ BatchReader = (*Client)(nil)
	_ DictPeer    = (*Client)(nil)
	_ Local       = (*archive.Store)(nil)
	_ Source      = (*archive.Store)(nil)
	_ Peer        = (*Client)(nil)
)

// Server answers requests from a Source. Pull, when set, is called for
// OpPull requests (nil refuses them); it should only queue the work, since
// the requester waits for the reply. Offer, when set, is called for
// OpOffer and OpOfferStored requests (nil refuses them); it copies the
// offered records before it returns (Carried reads those the request
// carries), and its error is the reply's.
//
// HandOff, when set, is called for OpHandOff requests (nil refuses them),
// as Offer is.
type Server struct {
	Source  Source
	Pull    func(ctx context.Context, r Request) error
	Offer   func(ctx context.Context, r Request) error
	HandOff func(ctx context.Context, r Request) error
	// Budget, if set, bounds the record bytes the replies of all the
	// Servers sharing it hold at once (HandleHeld), room for a record
	// taken before it is read (its stored size, then what a gzip member
	// made of it adds): a batch's records past it are omitted (the
	// client asks for them again), a single read waits for room until
	// ctx ends.
	Budget *wire.ReplyBudget
}

// Handle is HandleHeld for a caller that lets the reply go at once.
func (s *Server) Handle(ctx context.Context, req []byte) ([]byte, error) {
	b, release, err := s.HandleHeld(ctx, req)
	release()
	return b, err
}

// HandleHeld decodes one request, answers it from s.Source and returns
// the encoded reply, and the function that gives its bytes back to
// s.Budget once it is written (always to be called). Errors, including
// malformed requests, are answered with an error reply; the returned
// error is the same error for the caller's logs and counters (nil for a
// successful answer).
func (s *Server) HandleHeld(ctx context.Context, req []byte) ([]byte, func(), error) {
	r, err := DecodeRequest(req)
	if err != nil {
		return errorReply(err), func() {}, err
	}
	var held int64
	release := func() {
		if held > 0 {
			s.Budget.Release(held)
			held = 0
		}
	}
	b, err := s.answer(ctx, r, &held)
	switch {
	case errors.Is(err, archive.ErrNotFound):
		release()
		return []byte{statusNotFound}, func() {}, err
	case err != nil:
		release()
		return errorReply(err), func() {}, err
	}
	return b, release, nil
}

// readHeld reads one record through read, holding room for it in
// s.Budget before it is read (its stored size: waiting for it when wait
// is set) and, once read, exactly its bytes (wire.ReplyBudget.Fit), which
// it adds to held. It returns archive.ErrNoRoom (wrapped) when room was
// lacking; then the record holds nothing.
func (s *Server) readHeld(ctx context.Context, e archive.Entry, held *int64, wait bool,
	read func(context.Context, archive.Entry, func(int64) bool) ([]byte, error)) ([]byte, error) {
	if s.Budget == nil {
		return read(ctx, e, nil)
	}
	var took int64
	data, err := read(ctx, e, func(n int64) bool {
		var ok bool
		took, ok = s.Budget.Take(ctx, n, wait)
		return ok
	})
	if err != nil {
		s.Budget.Release(took)
		return nil, err
	}
	took, ok := s.Budget.Fit(ctx, took, int64(len(data)), wait)
	if !ok {
		s.Budget.Release(took)
		return nil, fmt.Errorf("replicate read %s: %w", e.Name(), archive.ErrNoRoom)
	}
	*held += took
	return data, nil
}

func (s *Server) answer(ctx context.Context, r Request, held *int64) ([]byte, error) {
	b := []byte{statusOK}
	switch r.Op {
	case OpSums:
		bounds := Split(r.A, r.B, r.N)
		for i := 1; i < len(bounds); i++ {
			d, err := s.Source.RangeSum(ctx, bounds[i-1], bounds[i])
			if err != nil {
				return nil, err
			}
			b = appendSum(b, d)
		}
	case OpEntries:
		ents, err := s.Source.EntriesUpTo(ctx, r.A, r.B, MaxEntries)
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(ents)))
		for _, e := range ents {
			b = appendEntry(b, e)
		}
	case OpRead:
		data, err := s.readHeld(ctx, r.Entry, held, true, s.Source.ReadFileWithin)
		if errors.Is(err, archive.ErrNoRoom) {
			return nil, fmt.Errorf("replies hold the budget's %d bytes: %w", s.Budget.Size(), cmp.Or(ctx.Err(), err))
		}
		if err != nil {
			return nil, err
		}
		b = append(b, data...)
	case OpReadBatch, OpReadStored:
		read := s.Source.ReadFileWithin
		if r.Op == OpReadStored {
			read = s.Source.ReadStoredWithin
		}
		b = binary.AppendUvarint(b, uint64(len(r.Entries)))
		full := false
		for _, e := range r.Entries {
			if full {
				b = append(b, batchOmitted)
				continue
			}
			// The first record waits for room, so that a batch always
			// brings one; the rest are asked for again.
			before := *held
			data, err := s.readHeld(ctx, e, held, *held == 0, read)
			switch {
			case errors.Is(err, archive.ErrNoRoom):
				full = true
				b = append(b, batchOmitted)
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, archive.ErrNotFound):
				b = append(b, batchNotFound)
			case err != nil:
				b = append(b, batchError)
			case len(b)+len(data)+2*binary.MaxVarintLen64+MaxBatch > MaxReply:
				if s.Budget != nil {
					s.Budget.Release(*held - before)
				}
				*held = before
				full = true
				b = append(b, batchOmitted)
			default:
				b = append(b, batchOK)
				b = binary.AppendUvarint(b, uint64(len(data)))
				b = append(b, data...)
			}
		}
	case OpPull:
		if s.Pull == nil {
			return nil, errors.New("pull requests not accepted")
		}
		if err := s.Pull(ctx, r); err != nil {
			return nil, err
		}
	case OpOffer, OpOfferStored:
		if s.Offer == nil {
			return nil, errors.New("offers not accepted")
		}
		if err := s.Offer(ctx, r); err != nil {
			return nil, err
		}
	case OpHandOff:
		if s.HandOff == nil {
			return nil, errors.New("hand-offs not accepted")
		}
		if err := s.HandOff(ctx, r); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func errorReply(err error) []byte {
	msg := err.Error()
	if len(msg) > maxText {
		msg = msg[:maxText]
	}
	return appendString([]byte{statusError}, msg)
}

// decodeReply checks a reply's status and returns a decoder positioned
// on its payload.
func decodeReply(b []byte) (*decoder, error) {
	if len(b) > MaxReply {
		return nil, fmt.Errorf("%w: reply of %d bytes", ErrProtocol, len(b))
	}
	d := &decoder{b: b}
	switch st := d.byte(); {
	case d.err != nil:
		return nil, d.err
	case st == statusOK:
		return d, nil
	case st == statusNotFound:
		if err := d.end(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrRemote, archive.ErrNotFound)
	case st == statusError:
		msg := d.string()
		if err := d.end(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", ErrRemote, msg)
	default:
		return nil, fmt.Errorf("%w: status %d", ErrProtocol, st)
	}
}

// DecodeSums parses the reply to an OpSums request for n sums.
func DecodeSums(b []byte, n int) ([]archive.DirSum, error) {
	d, err := decodeReply(b)
	if err != nil {
		return nil, err
	}
	out := make([]archive.DirSum, 0, min(n, MaxFanout))
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.sum())
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeEntries parses the reply to an OpEntries request.
func DecodeEntries(b []byte) ([]archive.Entry, error) {
	d, err := decodeReply(b)
	if err != nil {
		return nil, err
	}
	n := d.uvarint()
	if n > MaxEntries {
		return nil, fmt.Errorf("%w: %d entries", ErrProtocol, n)
	}
	out := make([]archive.Entry, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		out = append(out, d.entry())
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeFile parses the reply to an OpRead request (the bytes are not yet
// verified: Import does that).
func DecodeFile(b []byte) ([]byte, error) {
	d, err := decodeReply(b)
	if err != nil {
		return nil, err
	}
	return d.b, nil
}

// Per-record status bytes of an OpReadBatch reply.
const (
	batchOK       = 0
	batchNotFound = 1
	batchError    = 2 // the peer could not read it (a corrupt record, say)
	batchOmitted  = 3 // left out to keep the reply under MaxReply
)

// ErrOmitted reports a record a batch reply left out for size: ask again.
var ErrOmitted = errors.New("replicate: left out of a full batch")

// Fetched is one record of an OpReadBatch reply: its bytes (not yet
// verified: Import does that), or why there are none.
type Fetched struct {
	Data []byte
	Err  error // wraps archive.ErrNotFound, ErrRemote or ErrOmitted
}

// DecodeFiles parses the reply to an OpReadBatch or OpReadStored request
// for n records.
func DecodeFiles(b []byte, n int) ([]Fetched, error) {
	d, err := decodeReply(b)
	if err != nil {
		return nil, err
	}
	if k := d.uvarint(); d.err == nil && k != uint64(n) {
		return nil, fmt.Errorf("%w: %d records for %d asked", ErrProtocol, k, n)
	}
	out := make([]Fetched, 0, min(n, MaxBatch))
	for i := 0; i < n && d.err == nil; i++ {
		switch st := d.byte(); st {
		case batchOK:
			k := d.uvarint()
			if d.err != nil || k > uint64(len(d.b)) {
				d.fail("record length")
				break
			}
			out = append(out, Fetched{Data: d.b[:k:k]})
			d.b = d.b[k:]
		case batchNotFound:
			out = append(out, Fetched{Err: fmt.Errorf("%w: %w", ErrRemote, archive.ErrNotFound)})
		case batchError:
			out = append(out, Fetched{Err: fmt.Errorf("%w: record unreadable", ErrRemote)})
		case batchOmitted:
			out = append(out, Fetched{Err: ErrOmitted})
		default:
			d.fail("record status")
		}
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeAck parses the reply to an OpPull or OpOffer request.
func DecodeAck(b []byte) error {
	d, err := decodeReply(b)
	if err != nil {
		return err
	}
	return d.end()
}
