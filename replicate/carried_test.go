package replicate

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// TestLargestOfferStoredFits: an OpOfferStored of MaxBatch records with
// the longest contact strings, carrying MaxOfferBytes, fits
// MaxOfferRequest and decodes.
func TestLargestOfferStoredFits(t *testing.T) {
	long := string(bytes.Repeat([]byte{'x'}, maxText))
	es := make([]archive.Entry, MaxBatch)
	carried := make([][]byte, MaxBatch)
	left := MaxOfferBytes
	for i := range es {
		es[i] = archive.Entry{Key: id.OfString(long), Digest: id.OfString(long), Day: 1 << 40, Seq: 1 << 20}
		n := min(left, MaxCarried)
		if n > 0 {
			carried[i] = bytes.Repeat([]byte{byte(i)}, n)
			left -= n
		}
	}
	r := Request{Op: OpOfferStored, From: Contact{Peer: long, Addr: long, Index: 1 << 16}, Entries: es, Carried: carried}
	b := r.Encode()
	if len(b) > MaxOfferRequest {
		t.Fatalf("largest carrying offer: %d bytes, over MaxOfferRequest %d", len(b), MaxOfferRequest)
	}
	got, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range carried {
		if !bytes.Equal(got.Carried[i], carried[i]) {
			t.Fatalf("record %d: %d bytes carried, decoded %d", i, len(carried[i]), len(got.Carried[i]))
		}
	}
}

// TestDecodeOfferStoredRejects: what an OpOfferStored may carry is
// bounded per record and in all, and only it may pass MaxRequest.
func TestDecodeOfferStoredRejects(t *testing.T) {
	a := id.OfString("a")
	es := func(n int) []archive.Entry {
		out := make([]archive.Entry, n)
		for i := range out {
			out[i] = archive.Entry{Key: id.OfString(string(rune('a' + i))), Day: 1}
		}
		return out
	}
	offer := func(carried ...[]byte) []byte {
		return Request{Op: OpOfferStored, A: a, B: a, Entries: es(len(carried)), Carried: carried}.Encode()
	}
	big := make([]byte, MaxCarried)
	badStatus := offer([]byte("x"))
	badStatus[len(badStatus)-3] = 7 // the status byte before length 1 and "x"
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"record over MaxCarried", offer(make([]byte, MaxCarried+1))},
		{"records over MaxOfferBytes", offer(big, big, big, big, big, big, big, big, big)},
		{"empty record", offer([]byte{})},
		{"bad status", badStatus},
		{"truncated record", offer([]byte("record"))[:len(offer([]byte("record")))-1]},
		{"oversized request of another op", append([]byte{byte(OpOffer)}, make([]byte, MaxRequest)...)},
		{"oversized carrying offer", append([]byte{byte(OpOfferStored)}, make([]byte, MaxOfferRequest)...)},
	} {
		if _, err := DecodeRequest(tc.b); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: err = %v, want ErrProtocol", tc.name, err)
		}
	}
}

// TestCarry: the records an offer carries are those that fit, in order;
// the others are named only.
func TestCarry(t *testing.T) {
	// 10 bytes; one too large to carry; seven of MaxCarried (the eighth
	// would pass MaxOfferBytes); a small one that still fits; one
	// unreadable.
	sizes := []int{10, MaxCarried + 1}
	for range 8 {
		sizes = append(sizes, MaxCarried)
	}
	sizes = append(sizes, 5, 0)
	want := []int{10, 0, MaxCarried, MaxCarried, MaxCarried, MaxCarried, MaxCarried, MaxCarried, MaxCarried, 0, 5, 0}
	ents := make([]archive.Entry, len(sizes))
	size := map[archive.Entry]int{}
	for i, n := range sizes {
		ents[i] = archive.Entry{Key: id.OfString(string(rune('a' + i))), Day: 1}
		size[ents[i]] = n
	}
	read := func(_ context.Context, e archive.Entry) ([]byte, error) {
		if size[e] == 0 {
			return nil, archive.ErrNotFound
		}
		return make([]byte, size[e]), nil
	}
	got := Carry(context.Background(), ents, read)
	for i, w := range want {
		if len(got[i]) != w || (w == 0) != (got[i] == nil) {
			t.Errorf("record %d: carried %d bytes (nil %v), want %d", i, len(got[i]), got[i] == nil, w)
		}
	}
}

// TestOfferStoredCopies: a replica imports what an offer carries without
// reading it from the owner, reads the rest, and verifies both alike: a
// forged carried record is refused. A peer that does not know the
// operation is offered names only.
func TestOfferStoredCopies(t *testing.T) {
	ctx := context.Background()
	c := makeCorpus(t, 12)
	src := openStore(t)
	for _, e := range c.ents {
		if _, _, err := src.Import(ctx, e.Name(), c.data[e]); err != nil {
			t.Fatal(err)
		}
	}
	srvOwner := &Server{Source: src}
	owner := NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		rep, _ := srvOwner.Handle(ctx, req)
		return rep, nil
	}))
	dst := openStore(t)
	var st Stats
	replica := &Server{Source: dst, Offer: func(ctx context.Context, r Request) error {
		var err error
		st, err = Copy(ctx, dst, WithCarried(owner, r), r.A, r.B, r.Entries, Options{})
		return err
	}}
	var ops []Op
	cl := NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		ops = append(ops, Op(req[0]))
		rep, _ := replica.Handle(ctx, req)
		return rep, nil
	}))
	from := Contact{Peer: "p", Addr: "127.0.0.1:1", Index: 2}
	es := c.ents[:6]
	carried := Carry(ctx, es, src.ReadStored)
	carried[4], carried[5] = nil, nil // named only: read from the owner
	if err := cl.OfferStored(ctx, id.ID{}, id.ID{}, from, es, carried); err != nil {
		t.Fatal(err)
	}
	if st.Pulled != 6 || st.Traffic.Requests != 1 || owner.Traffic().Requests != 1 {
		t.Fatalf("copy: %+v, owner asked %d times; want 6 pulled, one read of the 2 not carried", st, owner.Traffic().Requests)
	}
	for _, e := range es {
		if ok, err := dst.Holds(ctx, e); err != nil || !ok {
			t.Fatalf("replica lacks %s: %v", e.Name(), err)
		}
	}
	// A carried record under another record's name: refused by Import.
	forged := [][]byte{c.data[c.ents[0]], c.data[c.ents[7]]}
	if err := cl.OfferStored(ctx, id.ID{}, id.ID{}, from, c.ents[6:8], forged); err != nil {
		t.Fatal(err)
	}
	if st.Rejected != 1 || st.Pulled != 1 {
		t.Fatalf("forged carried record: %+v, want 1 rejected, 1 pulled", st)
	}
	if ok, _ := dst.Holds(ctx, c.ents[6]); ok {
		t.Fatal("replica holds the forged record")
	}
	// A carried decompression bomb (a record that expands to 32 MiB from
	// a few KB) is refused by Import like a read one, and nothing stored.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	fmt.Fprintf(zw, "WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.org/\r\nContent-Length: %d\r\n\r\n", 32<<20)
	zw.Write(make([]byte, 32<<20))
	zw.Close()
	if bomb.Len() > MaxCarried {
		t.Fatalf("bomb of %d bytes: not carried", bomb.Len())
	}
	st = Stats{}
	if err := cl.OfferStored(ctx, id.ID{}, id.ID{}, from, c.ents[10:11], [][]byte{bomb.Bytes()}); err != nil {
		t.Fatal(err)
	}
	if st.Rejected != 1 || st.Pulled != 0 {
		t.Fatalf("carried bomb: %+v, want 1 rejected", st)
	}
	if ok, _ := dst.Holds(ctx, c.ents[10]); ok {
		t.Fatal("replica holds the bomb's name")
	}
	// An older replica answers the operation as unknown: names only, then on.
	old := NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		ops = append(ops, Op(req[0]))
		if Op(req[0]) == OpOfferStored {
			return errorReply(errors.New(unknownOp + " 8")), nil
		}
		rep, _ := replica.Handle(ctx, req)
		return rep, nil
	}))
	ops = nil
	for range 2 {
		if err := old.OfferStored(ctx, id.ID{}, id.ID{}, from, c.ents[8:10], Carry(ctx, c.ents[8:10], src.ReadStored)); err != nil {
			t.Fatal(err)
		}
	}
	if want := []Op{OpOfferStored, OpOffer, OpOffer}; !equalOps(ops, want) {
		t.Fatalf("ops sent to an older replica: %v, want %v", ops, want)
	}
}

func equalOps(a, b []Op) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
