package links

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// Protocol is the link index protocol, one request per stream:
//
//	request  frame 1: JSON Header
//	         frame 2 (Op "put"): zstd of the records, one JSON object a line
//	reply    frame 1: JSON Reply
//
// Op "get" asks for the records of Header.URL this node holds (all of
// them: the asker merges holders, then selects a date, Router.Links).
const Protocol protocol.ID = "/herod/linkindex/1.0.0"

// Header is frame 1 of a request.
type Header struct {
	Op  string `json:"op"`            // "put" or "get"
	N   int    `json:"n,omitempty"`   // records in frame 2 (put)
	URL string `json:"url,omitempty"` // target asked for (get)
}

// Reply is the reply frame.
type Reply struct {
	Accepted int     `json:"accepted,omitempty"`
	Error    string  `json:"error,omitempty"`
	Result   *Result `json:"result,omitempty"`
}

// Limits of the protocol.
const (
	MaxBatch  = 5000     // records in one put
	MaxHeader = 4 << 10  // frame 1
	MaxBody   = 4 << 20  // frame 2, compressed
	MaxReply  = 16 << 20 // a get's answer: DefaultPerTarget records of two MaxLen URLs and more
	// maxRecordBytes bounds one record's JSON line.
	maxRecordBytes = 2*canon.MaxLen + 4*MaxAnchor + 256
	maxActive      = 16
	streamTimeout  = 30 * time.Second
)

var errRemote = errors.New("links: remote error")

var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(2), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(MaxBatch*maxRecordBytes), zstd.WithDecoderMaxWindow(8<<20))
)

// EncodeRecords compresses recs as frame 2 of a put.
func EncodeRecords(recs []Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		_ = enc.Encode(r) // a Record always encodes
	}
	return zenc.EncodeAll(b.Bytes(), nil)
}

// DecodeRecords reverses EncodeRecords, refusing more than n records,
// n over MaxBatch, or more bytes than n records may hold decompressed.
// It does not check the records (Index.Put does).
func DecodeRecords(b []byte, n int) ([]Record, error) {
	if n < 0 || n > MaxBatch {
		return nil, fmt.Errorf("links: %d records in one batch", n)
	}
	limit := int64(n) * maxRecordBytes
	if len(b) == 0 && n == 0 {
		return nil, nil
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return nil, fmt.Errorf("links: decompress: %w", err)
	}
	if h.HasFCS && h.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("links: frame declares %d bytes, limit %d: %w", h.FrameContentSize, limit, wire.ErrTooLarge)
	}
	// DecodeAll is safe for concurrent use; the decoder's memory bound
	// (MaxBatch records) stops a frame that lies about its size.
	raw, err := zdec.DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("links: decompress: %w", err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("links: %d bytes decompressed, limit %d: %w", len(raw), limit, wire.ErrTooLarge)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	out := make([]Record, 0, min(n, 1024))
	for dec.More() {
		if len(out) == n {
			return nil, fmt.Errorf("links: more than %d records", n)
		}
		var r Record
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("links: record %d: %w", len(out), err)
		}
		out = append(out, r)
	}
	if len(out) != n {
		return nil, fmt.Errorf("links: header says %d records, body has %d", n, len(out))
	}
	return out, nil
}

// Server answers the protocol from an Index; Keep (nil: keep all)
// returns the filter of sources a get leaves out.
type Server struct {
	Index *Index
	Keep  func() Filter
}

// Spec declares the protocol to the node's kit: members only, a header
// and one compressed batch, MaxBatch records at most.
func (sv *Server) Spec() kit.Spec {
	return kit.Spec{ID: Protocol, Handle: sv.serve, MaxFrame: MaxBody,
		MaxRequest: MaxHeader + MaxBody + 20, Deadline: streamTimeout, MaxActive: maxActive}
}

func (sv *Server) serve(ctx context.Context, q *kit.Request) error {
	var h Header
	if err := q.ReadJSON(MaxHeader, &h); err != nil {
		return err
	}
	var rep Reply
	switch h.Op {
	case "put":
		body, err := q.ReadFrame(MaxBody)
		if err != nil {
			return err
		}
		recs, err := DecodeRecords(body, h.N)
		if err != nil {
			return fmt.Errorf("%w: %w", kit.ErrBadFrame, err)
		}
		n, err := sv.Index.Put(ctx, recs)
		if err != nil {
			rep.Error = err.Error()
		}
		rep.Accepted = n
	case "get":
		c, err := canon.Canonical(h.URL)
		if err != nil {
			rep.Error = err.Error()
			break
		}
		var keep Filter
		if sv.Keep != nil {
			keep = sv.Keep()
		}
		res, err := sv.Index.Links(ctx, c, time.Time{}, 0, keep)
		if err != nil {
			rep.Error = err.Error()
			break
		}
		rep.Result = &res
	default:
		return fmt.Errorf("%w: op %q", kit.ErrBadFrame, h.Op)
	}
	return q.Reply(rep)
}

// Client sends requests of the protocol over streams Open opens.
type Client struct {
	Open func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
}

// call sends one request (body may be nil) and reads its reply.
func (cl *Client) call(ctx context.Context, to ring.Contact, h Header, body []byte) (Reply, error) {
	var rep Reply
	s, err := cl.Open(ctx, to, Protocol)
	if err != nil {
		return rep, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, h); err != nil {
		_ = s.Reset()
		return rep, err
	}
	if body != nil {
		if err := wire.WriteFrame(s, body); err != nil {
			_ = s.Reset()
			return rep, err
		}
	}
	_ = s.CloseWrite()
	if err := wire.ReadJSON(bufio.NewReader(s), MaxReply, &rep); err != nil {
		_ = s.Reset()
		return rep, fmt.Errorf("reply: %w", err)
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("%w: %s", errRemote, rep.Error)
	}
	return rep, nil
}

// Put stores recs (at most MaxBatch) at to.
func (cl *Client) Put(ctx context.Context, to ring.Contact, recs []Record) error {
	if _, err := cl.call(ctx, to, Header{Op: "put", N: len(recs)}, EncodeRecords(recs)); err != nil {
		return fmt.Errorf("links put to %s: %w", to.Addr, err)
	}
	return nil
}

// Get asks to for every record of target it holds.
func (cl *Client) Get(ctx context.Context, to ring.Contact, target string) (Result, error) {
	rep, err := cl.call(ctx, to, Header{Op: "get", URL: target}, nil)
	if err != nil {
		return Result{}, fmt.Errorf("links get from %s: %w", to.Addr, err)
	}
	if rep.Result == nil {
		return Result{Target: target}, nil
	}
	return *rep.Result, nil
}
