package replicate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Carry picks which of the records es an OpOfferStored carries: each as
// read returns it (the sender's stored bytes), in order, while it is at
// most MaxCarried bytes and the total stays within MaxOfferBytes; a
// record read cannot return, or that does not fit, is named only
// (nil), and the receiver reads it as for OpOffer.
func Carry(ctx context.Context, es []archive.Entry, read func(ctx context.Context, e archive.Entry) ([]byte, error)) [][]byte {
	out := make([][]byte, len(es))
	total := 0
	for i, e := range es {
		data, err := read(ctx, e)
		if err != nil || len(data) == 0 || len(data) > MaxCarried || total+len(data) > MaxOfferBytes {
			continue
		}
		out[i], total = data, total+len(data)
	}
	return out
}

// OfferStored is Offer with the records' stored bytes carried in the
// request (OpOfferStored): carried[i] is es[i]'s (nil: named only; see
// Carry). A peer that does not know the operation is offered the names
// only (OpOffer), from then on.
func (c *Client) OfferStored(ctx context.Context, a, b id.ID, from Contact, es []archive.Entry, carried [][]byte) error {
	if len(es) < 1 || len(es) > MaxBatch || len(carried) != len(es) {
		return fmt.Errorf("replicate offer: %d entries (%d carried), want 1-%d", len(es), len(carried), MaxBatch)
	}
	if c.namesOnly.Load() {
		return c.Offer(ctx, a, b, from, es)
	}
	rep, err := c.call(ctx, Request{Op: OpOfferStored, A: a, B: b, From: from, Entries: es, Carried: carried})
	if err != nil {
		return fmt.Errorf("replicate offer: %w", err)
	}
	err = DecodeAck(rep)
	if errors.Is(err, ErrRemote) && strings.Contains(err.Error(), unknownOp) {
		c.namesOnly.Store(true)
		return c.Offer(ctx, a, b, from, es)
	}
	if err != nil {
		return fmt.Errorf("replicate offer: %w", err)
	}
	return nil
}

// HandOff tells the owner of virtual server b, which runs on the peer,
// that from holds the records es of b's range (1..MaxBatch; carried as
// for OfferStored) and waits until the owner has copied them (OpHandOff):
// a nil error means it holds every one.
func (c *Client) HandOff(ctx context.Context, b id.ID, from Contact, es []archive.Entry, carried [][]byte) error {
	if len(es) < 1 || len(es) > MaxBatch || len(carried) != len(es) {
		return fmt.Errorf("replicate hand-off: %d entries (%d carried), want 1-%d", len(es), len(carried), MaxBatch)
	}
	rep, err := c.call(ctx, Request{Op: OpHandOff, A: b, B: b, From: from, Entries: es, Carried: carried})
	if err != nil {
		return fmt.Errorf("replicate hand-off: %w", err)
	}
	if err := DecodeAck(rep); err != nil {
		return fmt.Errorf("replicate hand-off: %w", err)
	}
	return nil
}

// WithCarried returns the peer an offer's records are copied from (Copy):
// the records r carries (OpOfferStored, OpHandOff) are answered from their bytes,
// the others read from c. What it answers is unverified, as any peer's
// bytes: Import checks each record.
func WithCarried(c *Client, r Request) Peer {
	m := make(map[archive.Entry][]byte, len(r.Carried))
	for i, data := range r.Carried {
		if data != nil && i < len(r.Entries) {
			m[r.Entries[i]] = data
		}
	}
	if len(m) == 0 {
		return c
	}
	return &carriedPeer{Client: c, carried: m}
}

// carriedPeer is a Client whose reads of carried records need no round
// trip. Its Traffic is the client's: the carried records were counted
// as the offer's, by the sender.
type carriedPeer struct {
	*Client
	carried map[archive.Entry][]byte
}

// ReadFiles implements BatchReader: carried records from the request,
// the others in one round trip to the sender.
func (p *carriedPeer) ReadFiles(ctx context.Context, es []archive.Entry) ([]Fetched, error) {
	out := make([]Fetched, len(es))
	var rest []archive.Entry
	var at []int
	for i, e := range es {
		if data, ok := p.carried[e]; ok {
			out[i] = Fetched{Data: data}
		} else {
			rest, at = append(rest, e), append(at, i)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	got, err := p.Client.ReadFiles(ctx, rest)
	if err != nil {
		return nil, err
	}
	for j, f := range got {
		out[at[j]] = f
	}
	return out, nil
}

// ReadFile implements Peer.
func (p *carriedPeer) ReadFile(ctx context.Context, e archive.Entry) ([]byte, error) {
	if data, ok := p.carried[e]; ok {
		return data, nil
	}
	return p.Client.ReadFile(ctx, e)
}
