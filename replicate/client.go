package replicate

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// RoundTripper carries one encoded request to a replica and returns its
// encoded reply. The node implements it with one libp2p stream per
// request and one length-prefixed frame each way; tests call a Server
// directly.
type RoundTripper interface {
	RoundTrip(ctx context.Context, req []byte) ([]byte, error)
}

// RoundTripFunc adapts a function to RoundTripper.
type RoundTripFunc func(ctx context.Context, req []byte) ([]byte, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	return f(ctx, req)
}

// Traffic counts a client's exchanges: round trips and the bytes of
// requests and replies as framed on the wire (payload plus its uvarint
// length prefix; transport encryption and multiplexing are not counted).
type Traffic struct {
	Requests int64 `json:"requests"`
	Sent     int64 `json:"sent"`
	Received int64 `json:"received"`
}

// Bytes returns the bytes sent plus received.
func (t Traffic) Bytes() int64 { return t.Sent + t.Received }

// Client is a remote replica seen as a Peer. It is safe for concurrent
// use; its counters add up over all calls.
type Client struct {
	rt                   RoundTripper
	reqs, sent, received atomic.Int64
	gzipOnly             atomic.Bool // the peer answered OpReadStored as an unknown op
	namesOnly            atomic.Bool // the peer answered OpOfferStored as an unknown op
	dicts                func(ctx context.Context, ref archive.DictRef) ([]byte, error)
}

// NewClient returns a client that sends its requests through rt.
func NewClient(rt RoundTripper) *Client { return &Client{rt: rt} }

// WithDictionaries makes the client a DictPeer whose dictionaries come
// from fetch (the node's dictionary protocol), and returns it. Call it
// before the client is used.
func (c *Client) WithDictionaries(fetch func(ctx context.Context, ref archive.DictRef) ([]byte, error)) *Client {
	c.dicts = fetch
	return c
}

// Dictionary implements DictPeer: the bytes of the dictionary ref names,
// unverified (Local.AddDictionary verifies them).
func (c *Client) Dictionary(ctx context.Context, ref archive.DictRef) ([]byte, error) {
	if c.dicts == nil {
		return nil, fmt.Errorf("replicate dictionary %s: no dictionary source", ref)
	}
	raw, err := c.dicts(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("replicate dictionary %s: %w", ref, err)
	}
	return raw, nil
}

// Traffic returns the counters so far.
func (c *Client) Traffic() Traffic {
	return Traffic{Requests: c.reqs.Load(), Sent: c.sent.Load(), Received: c.received.Load()}
}

func framed(n int) int64 { return int64(n + len(binary.AppendUvarint(nil, uint64(n)))) }

func (c *Client) call(ctx context.Context, r Request) ([]byte, error) {
	req := r.Encode()
	c.reqs.Add(1)
	c.sent.Add(framed(len(req)))
	rep, err := c.rt.RoundTrip(ctx, req)
	if err != nil {
		return nil, err
	}
	c.received.Add(framed(len(rep)))
	return rep, nil
}

// RangeSums returns the sums of the n sub-ranges Split(a, b, n) of
// (a, b] in one round trip (n at most MaxFanout).
func (c *Client) RangeSums(ctx context.Context, a, b id.ID, n int) ([]archive.DirSum, error) {
	if n < 1 || n > MaxFanout || Split(a, b, n) == nil {
		return nil, fmt.Errorf("replicate sums: cannot split into %d", n)
	}
	rep, err := c.call(ctx, Request{Op: OpSums, A: a, B: b, N: n})
	if err != nil {
		return nil, fmt.Errorf("replicate sums: %w", err)
	}
	sums, err := DecodeSums(rep, n)
	if err != nil {
		return nil, fmt.Errorf("replicate sums: %w", err)
	}
	return sums, nil
}

// RangeSum implements Peer.
func (c *Client) RangeSum(ctx context.Context, a, b id.ID) (archive.DirSum, error) {
	s, err := c.RangeSums(ctx, a, b, 1)
	if err != nil {
		return archive.DirSum{}, err
	}
	return s[0], nil
}

// Entries implements Peer. Ranges holding more than MaxEntries files are
// refused by the server; Sync only lists small ranges.
func (c *Client) Entries(ctx context.Context, a, b id.ID) ([]archive.Entry, error) {
	rep, err := c.call(ctx, Request{Op: OpEntries, A: a, B: b})
	if err != nil {
		return nil, fmt.Errorf("replicate entries: %w", err)
	}
	ents, err := DecodeEntries(rep)
	if err != nil {
		return nil, fmt.Errorf("replicate entries: %w", err)
	}
	return ents, nil
}

// ReadFile implements Peer. The bytes are whatever the peer sent: the
// caller verifies them (Local.Import does).
func (c *Client) ReadFile(ctx context.Context, e archive.Entry) ([]byte, error) {
	rep, err := c.call(ctx, Request{Op: OpRead, Entry: e})
	if err != nil {
		return nil, fmt.Errorf("replicate read %s: %w", e.Name(), err)
	}
	data, err := DecodeFile(rep)
	if err != nil {
		return nil, fmt.Errorf("replicate read %s: %w", e.Name(), err)
	}
	return data, nil
}

// ReadFiles asks for up to MaxBatch records in one round trip, as the
// peer stores them (OpReadStored: gzip members, or zstd frames behind the
// frame naming their dictionary; a peer that does not know that
// operation is asked with OpReadBatch, for gzip members, from then on);
// the i-th answer is the i-th entry's. The bytes are whatever the peer
// sent: the caller verifies them (Local.Import does).
func (c *Client) ReadFiles(ctx context.Context, es []archive.Entry) ([]Fetched, error) {
	if len(es) < 1 || len(es) > MaxBatch {
		return nil, fmt.Errorf("replicate read batch: %d entries, want 1-%d", len(es), MaxBatch)
	}
	op := OpReadStored
	if c.gzipOnly.Load() {
		op = OpReadBatch
	}
	rep, err := c.call(ctx, Request{Op: op, Entries: es})
	if err != nil {
		return nil, fmt.Errorf("replicate read batch: %w", err)
	}
	out, err := DecodeFiles(rep, len(es))
	if op == OpReadStored && errors.Is(err, ErrRemote) && strings.Contains(err.Error(), unknownOp) {
		c.gzipOnly.Store(true)
		return c.ReadFiles(ctx, es)
	}
	if err != nil {
		return nil, fmt.Errorf("replicate read batch: %w", err)
	}
	return out, nil
}

// Pull asks the peer to pull the range (a, b] from the member from.
func (c *Client) Pull(ctx context.Context, a, b id.ID, from Contact) error {
	rep, err := c.call(ctx, Request{Op: OpPull, A: a, B: b, From: from})
	if err != nil {
		return fmt.Errorf("replicate pull request: %w", err)
	}
	if err := DecodeAck(rep); err != nil {
		return fmt.Errorf("replicate pull request: %w", err)
	}
	return nil
}

// Offer tells the peer that from, the owner of (a, b], holds the records
// es (1..MaxBatch, all in (a, b]) and waits until the peer has copied
// them (OpOffer): a nil error means the peer holds every one it could
// read and verify.
func (c *Client) Offer(ctx context.Context, a, b id.ID, from Contact, es []archive.Entry) error {
	if len(es) < 1 || len(es) > MaxBatch {
		return fmt.Errorf("replicate offer: %d entries, want 1-%d", len(es), MaxBatch)
	}
	rep, err := c.call(ctx, Request{Op: OpOffer, A: a, B: b, From: from, Entries: es})
	if err != nil {
		return fmt.Errorf("replicate offer: %w", err)
	}
	if err := DecodeAck(rep); err != nil {
		return fmt.Errorf("replicate offer: %w", err)
	}
	return nil
}
