package importer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
)

// Protocol carries imported records from the importing node to the
// owner of their URLs: a JSON header frame {"records": n}, then n
// frames, each one record as archive.Store.EncodeImported returns it;
// the owner answers one JSON frame, a Result per record. Members only
// (the kit's gate); a record is stored only if signed by the member that
// sends it, marked imported, dated by its import no more than MaxAge ago,
// and of a URL this node owns (Admit).
const Protocol protocol.ID = "/herod/import/1.0.0"

// Bounds of one request: MaxBatch records, each at most MaxRecord
// bytes, MaxRequest bytes in all.
const (
	MaxBatch   = batchRecords
	MaxRecord  = 64<<20 + archive.MaxHead
	MaxRequest = batchBytes + MaxRecord + MaxBatch*16
	// MaxAge bounds how long before its arrival a record may have been
	// read by its importer: an import cannot be back-dated.
	MaxAge = 10 * time.Minute
	// Deadline bounds one exchange.
	Deadline = 2 * time.Minute
)

// ErrNotOwner reports a record of a URL the receiving node does not own.
var ErrNotOwner = errors.New("importer: not the owner")

// ErrStale reports a record read by its importer more than MaxAge ago.
var ErrStale = errors.New("importer: import time too old")

// header is a request's first frame.
type header struct {
	Records int `json:"records"`
}

// Result is an owner's answer about one record.
type Result struct {
	Added    bool   `json:"added,omitempty"`     // stored anew
	NotOwner bool   `json:"not_owner,omitempty"` // sent to the wrong node
	Error    string `json:"error,omitempty"`     // refused, and why
	// Retry marks a failure of the owner, not of the record (its disk
	// is full or failing): the import stops, to resume later.
	Retry bool  `json:"retry,omitempty"`
	err   error // with Retry, on this node: the store's error
}

// reply is the owner's answer to a request.
type reply struct {
	Results []Result `json:"results"`
}

// Admit returns the check an owner applies to a record before storing
// it: a URL it owns (owns), an import time no older than MaxAge by now.
func Admit(owns func(id.ID) bool, now func() time.Time) func(archive.Version) error {
	return func(v archive.Version) error {
		if !owns(v.Key) {
			return ErrNotOwner
		}
		if v.Imported != nil && now().Sub(v.Imported.At) > MaxAge {
			return fmt.Errorf("%w: read at %s", ErrStale, v.Imported.At.Format(time.RFC3339))
		}
		return nil
	}
}

// add stores one record and says what became of it.
func add(ctx context.Context, st Store, data []byte, sender string, admit func(archive.Version) error) Result {
	_, added, err := st.AddImported(ctx, data, sender, admit)
	switch {
	case err == nil:
		return Result{Added: added}
	case errors.Is(err, ErrNotOwner):
		return Result{NotOwner: true, Error: err.Error()}
	case errors.Is(err, archive.ErrCorrupt), errors.Is(err, archive.ErrBadCapture), errors.Is(err, archive.ErrNotImported),
		errors.Is(err, archive.ErrBadImport), errors.Is(err, ErrStale):
		return Result{Error: err.Error()}
	}
	return Result{Error: err.Error(), Retry: true, err: err}
}

// Server answers Protocol for this node's store.
type Server struct {
	Store Store
	Admit func(archive.Version) error
}

// Spec declares Protocol to the node's kit.
func (sv *Server) Spec() kit.Spec {
	return kit.Spec{ID: Protocol, Handle: sv.Serve, MaxFrame: MaxRecord, MaxRequest: MaxRequest,
		Deadline: Deadline, MaxActive: 4}
}

// Serve answers one request: the handler of Protocol.
func (sv *Server) Serve(ctx context.Context, q *kit.Request) error {
	var h header
	if err := q.ReadJSON(4096, &h); err != nil {
		return err
	}
	if h.Records < 0 || h.Records > MaxBatch {
		return fmt.Errorf("%w: %d records in one import request, at most %d", kit.ErrBadFrame, h.Records, MaxBatch)
	}
	sender := q.Peer().String()
	rep := reply{Results: make([]Result, h.Records)}
	for i := range rep.Results {
		data, err := q.ReadFrame(0)
		if err != nil {
			return err
		}
		rep.Results[i] = add(ctx, sv.Store, data, sender, sv.Admit)
	}
	return q.Reply(rep)
}

// Client sends records to owners over Protocol.
type Client struct {
	// Open opens a stream of protocol p to the node o names.
	Open func(ctx context.Context, o Owner, p protocol.ID) (network.Stream, error)
}

// Send offers recs to o and returns its results; a result with Retry
// set becomes an error.
func (cl *Client) Send(ctx context.Context, o Owner, recs [][]byte) ([]Result, error) {
	s, err := cl.Open(ctx, o, Protocol)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(Deadline))
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	bw := bufio.NewWriterSize(s, 64<<10)
	if err := wire.WriteJSON(bw, header{Records: len(recs)}); err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := wire.WriteFrame(bw, r); err != nil {
			return nil, err
		}
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	var rep reply
	if err := wire.ReadJSON(bufio.NewReader(s), 1<<20, &rep); err != nil {
		return nil, fmt.Errorf("import reply: %w", err)
	}
	for _, r := range rep.Results {
		if r.Retry {
			return nil, fmt.Errorf("owner cannot store: %s", r.Error)
		}
	}
	return rep.Results, nil
}
