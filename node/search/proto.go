package search

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
	fts "github.com/herod-archive/herod/search"
)

// Protocol carries postings to a term's holders ("add") and a term's
// posting query to them ("query"): one JSON Request frame, then for an
// add one frame of postings as one posting set (search.AppendPostingSet:
// each version's URL, range and length once, each term once, a posting
// two or three bytes), zstd-compressed; the answer is one JSON Reply
// frame. Version 1.0.0 sent each posting whole (its URL and key in
// every one): about 20 times the bytes.
const Protocol protocol.ID = "/herod/search/1.1.0"

// Limits of the protocol.
const (
	maxRequestFrame  = 512 << 10 // a query's Keys: maxReplyPostings ids of 43 JSON bytes
	maxAddBytes      = 16 << 20  // compressed
	maxAddRaw        = 64 << 20  // decompressed
	addChunk         = 8 << 20   // encoded postings a message, before compression
	maxAddPostings   = 200_000
	maxReplyFrame    = 8 << 20
	maxReplyPostings = 10_000
)

// Operations of a Request.
const (
	OpAdd   = "add"
	OpQuery = "query"
)

// Request is the first frame of an exchange.
type Request struct {
	Op       string            `json:"op"`
	Postings int               `json:"postings,omitempty"` // an add's count
	Query    *fts.PostingQuery `json:"query,omitempty"`
}

// Reply answers a Request.
type Reply struct {
	Error string           `json:"error,omitempty"`
	List  *fts.PostingList `json:"list,omitempty"`
}

// errRemote reports an error a holder returned.
var errRemote = errors.New("search: remote error")

// Spec declares the protocol to the node's kit.
func (sv *Service) Spec() kit.Spec {
	return kit.Spec{ID: Protocol, Handle: sv.Serve, MaxFrame: maxAddBytes,
		MaxRequest: maxAddBytes + maxRequestFrame + 32, MaxActive: 32}
}

// Serve answers one request of a member: the handler of Protocol.
func (sv *Service) Serve(ctx context.Context, q *kit.Request) error {
	var req Request
	if err := q.ReadJSON(maxRequestFrame, &req); err != nil {
		return err
	}
	switch req.Op {
	case OpAdd:
		if req.Postings <= 0 || req.Postings > maxAddPostings {
			return fmt.Errorf("%w: add of %d postings", kit.ErrBadFrame, req.Postings)
		}
		b, err := q.ReadFrame(maxAddBytes)
		if err != nil {
			return err
		}
		ps, err := decodeAdd(b, req.Postings)
		if err != nil {
			return fmt.Errorf("%w: %v", kit.ErrBadFrame, err)
		}
		if err := sv.roomFor(len(ps)); err != nil {
			return q.Reply(Reply{Error: err.Error()})
		}
		if err := sv.Store.Put(ctx, ps); err != nil {
			return q.Reply(Reply{Error: err.Error()})
		}
		sv.received.Add(int64(len(ps)))
		sv.notePut()
		return q.Reply(Reply{})
	case OpQuery:
		if req.Query == nil {
			return fmt.Errorf("%w: query without its query", kit.ErrBadFrame)
		}
		pq := *req.Query
		pq.Limit = min(max(pq.Limit, 1), maxReplyPostings)
		if len(pq.Keys) > maxReplyPostings {
			return fmt.Errorf("%w: %d keys", kit.ErrBadFrame, len(pq.Keys))
		}
		l, err := sv.Store.Postings(ctx, pq)
		if err != nil {
			return q.Reply(Reply{Error: err.Error()})
		}
		sv.served.Add(1)
		return q.Reply(Reply{List: &l})
	default:
		return fmt.Errorf("%w: op %q", kit.ErrBadFrame, req.Op)
	}
}

// zenc compresses adds; zdecs decompress them, within maxAddRaw and an
// 8 MiB window.
var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	zdecs   = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(8<<20), zstd.WithDecoderMaxMemory(maxAddRaw))
		if err != nil {
			panic(err) // the options are constant
		}
		return d
	}}
)

// encodeAdd encodes postings as an add's second frame.
func encodeAdd(ps []fts.Posting) []byte {
	return zenc.EncodeAll(fts.AppendPostingSet(nil, ps), nil)
}

// decodeAdd reverses encodeAdd, refusing more than maxAddRaw bytes
// decompressed (cut there, before they are allocated) and a count other
// than n.
func decodeAdd(b []byte, n int) ([]fts.Posting, error) {
	d := zdecs.Get().(*zstd.Decoder)
	defer zdecs.Put(d)
	if err := d.Reset(bytes.NewReader(b)); err != nil {
		return nil, err
	}
	raw, err := wire.ReadAll(d, maxAddRaw)
	if err != nil {
		return nil, err
	}
	return fts.DecodePostingSet(raw, n)
}

// call sends one request to the real node behind c and reads its reply.
func (sv *Service) call(ctx context.Context, c ring.Contact, req Request, body []byte) (Reply, error) {
	s, err := sv.Open(ctx, c, Protocol)
	if err != nil {
		return Reply{}, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, req); err != nil {
		s.Reset()
		return Reply{}, fmt.Errorf("search %s to %s: %w", req.Op, c.Addr, err)
	}
	if body != nil {
		if err := wire.WriteFrame(s, body); err != nil {
			s.Reset()
			return Reply{}, fmt.Errorf("search %s to %s: %w", req.Op, c.Addr, err)
		}
	}
	_ = s.CloseWrite()
	var rep Reply
	if err := wire.ReadJSON(bufio.NewReader(s), maxReplyFrame, &rep); err != nil {
		s.Reset()
		return Reply{}, fmt.Errorf("search %s to %s: %w", req.Op, c.Addr, err)
	}
	if rep.Error != "" {
		return Reply{}, fmt.Errorf("%w: %s: %s", errRemote, c.Addr, rep.Error)
	}
	return rep, nil
}

// DefaultMaxPostings is Service.MaxPostings when not set: about 0.5 GB
// of postings at the 3 bytes each they take on disk (with their
// versions' rows, about 4 bytes a posting on the sample web).
const DefaultMaxPostings = 1 << 27

// ErrIndexFull reports an add refused because the store holds
// MaxPostings: a member cannot fill this node's disk with postings.
var ErrIndexFull = errors.New("search: index full")

// roomFor reports whether the store takes n more postings from a member.
func (sv *Service) roomFor(n int) error {
	limit := cmp.Or(sv.MaxPostings, DefaultMaxPostings)
	if held := sv.Store.Counts().Postings; held+int64(n) > limit {
		sv.refused.Add(int64(n))
		return fmt.Errorf("%w: %d postings held, %d more offered, at most %d", ErrIndexFull, held, n, limit)
	}
	return nil
}
