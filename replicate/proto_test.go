package replicate

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"reflect"
	"testing"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

func sampleRequests() []Request {
	a, b := id.OfString("a"), id.OfString("b")
	return []Request{
		{Op: OpSums, A: a, B: b, N: 1},
		{Op: OpSums, A: a, B: a, N: MaxFanout},
		{Op: OpEntries, A: a, B: b},
		{Op: OpRead, Entry: archive.Entry{Key: a, Digest: b, Day: 20412}},
		{Op: OpRead, Entry: archive.Entry{Key: a, Digest: b, Day: -3, Seq: 2}},
		{Op: OpPull, A: a, B: b, From: Contact{Peer: "12D3KooWabc", Addr: "127.0.0.1:4001", Index: 3}},
		{Op: OpReadBatch, Entries: []archive.Entry{{Key: a, Digest: b, Day: 1}, {Key: b, Digest: a, Day: 2, Seq: 1}}},
		{Op: OpReadStored, Entries: []archive.Entry{{Key: a, Digest: b, Day: 1}}},
		{Op: OpOffer, A: a, B: b, From: Contact{Peer: "12D3KooWabc", Addr: "127.0.0.1:4001", Index: 3},
			Entries: []archive.Entry{{Key: b, Digest: a, Day: 20412, Seq: 2}}},
		{Op: OpOfferStored, A: a, B: b, From: Contact{Peer: "12D3KooWabc", Addr: "127.0.0.1:4001", Index: 3},
			Entries: []archive.Entry{{Key: b, Digest: a, Day: 20412}, {Key: a, Digest: b, Day: 20412}},
			Carried: [][]byte{[]byte("a stored record"), nil}},
		{Op: OpHandOff, A: b, B: b, From: Contact{Peer: "12D3KooWdef", Addr: "127.0.0.1:4002", Index: 0},
			Entries: []archive.Entry{{Key: a, Digest: b, Day: 20413}}, Carried: [][]byte{[]byte("a foreign record")}},
	}
}

// TestLargestOfferFits: an offer of MaxBatch records with the longest
// contact strings still fits MaxRequest.
func TestLargestOfferFits(t *testing.T) {
	long := string(bytes.Repeat([]byte{'x'}, maxText))
	es := make([]archive.Entry, MaxBatch)
	for i := range es {
		es[i] = archive.Entry{Key: id.OfString(long), Digest: id.OfString(long), Day: 1 << 40, Seq: 1 << 20}
	}
	r := Request{Op: OpOffer, From: Contact{Peer: long, Addr: long, Index: 1 << 16}, Entries: es}
	b := r.Encode()
	if len(b) > MaxRequest {
		t.Fatalf("largest offer: %d bytes, over MaxRequest %d", len(b), MaxRequest)
	}
	if _, err := DecodeRequest(b); err != nil {
		t.Fatal(err)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range sampleRequests() {
		got, err := DecodeRequest(r.Encode())
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip: %+v, want %+v", got, r)
		}
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	a := id.OfString("a")
	narrow := id.FromBig(new(big.Int).Add(new(big.Int).SetBytes(a[:]), big.NewInt(3)))
	good := Request{Op: OpEntries, A: a, B: a}.Encode()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown op", []byte{9}},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"zero sums", Request{Op: OpSums, A: a, B: a, N: 0}.Encode()},
		{"too many sums", Request{Op: OpSums, A: a, B: a, N: MaxFanout + 1}.Encode()},
		{"range too narrow to split", Request{Op: OpSums, A: a, B: narrow, N: 16}.Encode()},
		{"long string", Request{Op: OpPull, From: Contact{Peer: string(make([]byte, maxText+1))}}.Encode()},
		{"oversized", make([]byte, MaxRequest+1)},
		{"empty offer", Request{Op: OpOffer, A: a, B: a}.Encode()},
		{"offer over MaxBatch", Request{Op: OpOffer, A: a, B: a, Entries: make([]archive.Entry, MaxBatch+1)}.Encode()},
	} {
		if _, err := DecodeRequest(tc.b); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: err = %v, want ErrProtocol", tc.name, err)
		}
	}
}

func TestServerReplies(t *testing.T) {
	ctx := context.Background()
	c := makeCorpus(t, 240)
	s := openStore(t)
	fill(t, s, c, func(i int) bool { return i < 20 })
	var pulled []Request
	srv := &Server{Source: s, Pull: func(_ context.Context, r Request) error {
		pulled = append(pulled, r)
		return nil
	}}
	cl := NewClient(RoundTripFunc(func(ctx context.Context, req []byte) ([]byte, error) {
		rep, _ := srv.Handle(ctx, req)
		return rep, nil
	}))
	sums, err := cl.RangeSums(ctx, id.ID{}, id.ID{}, 16)
	if err != nil {
		t.Fatal(err)
	}
	var total archive.DirSum
	for _, d := range sums {
		total.Count += d.Count
	}
	if total.Count != 20 {
		t.Fatalf("sub-range counts add up to %d, want 20", total.Count)
	}
	ents, err := cl.Entries(ctx, id.ID{}, id.ID{})
	if err != nil || len(ents) != 20 {
		t.Fatalf("entries: %d, %v", len(ents), err)
	}
	data, err := cl.ReadFile(ctx, ents[0])
	if err != nil || !bytes.Equal(data, c.data[ents[0]]) {
		t.Fatalf("read: %v", err)
	}
	missing := ents[0]
	missing.Day++
	if _, err := cl.ReadFile(ctx, missing); !errors.Is(err, archive.ErrNotFound) || !errors.Is(err, ErrRemote) {
		t.Fatalf("read of a missing file: %v", err)
	}
	got, err := cl.ReadFiles(ctx, []archive.Entry{ents[1], missing, ents[2]})
	if err != nil || len(got) != 3 || !bytes.Equal(got[0].Data, c.data[ents[1]]) || !bytes.Equal(got[2].Data, c.data[ents[2]]) ||
		!errors.Is(got[1].Err, archive.ErrNotFound) || got[1].Data != nil {
		t.Fatalf("batch read: %+v, %v", got, err)
	}
	if _, err := cl.ReadFiles(ctx, make([]archive.Entry, MaxBatch+1)); err == nil {
		t.Fatal("batch over MaxBatch sent")
	}
	from := Contact{Peer: "p", Addr: "127.0.0.1:1", Index: 1}
	if err := cl.Pull(ctx, id.ID{}, ents[0].Key, from); err != nil || len(pulled) != 1 || pulled[0].From != from {
		t.Fatalf("pull: %v %+v", err, pulled)
	}
	srv.Pull = nil
	if err := cl.Pull(ctx, id.ID{}, ents[0].Key, from); !errors.Is(err, ErrRemote) {
		t.Fatalf("pull without a handler: %v", err)
	}
	rep, err := srv.Handle(ctx, []byte{42})
	if !errors.Is(err, ErrProtocol) || DecodeAck(rep) == nil {
		t.Fatalf("bad request answered %x, %v", rep, err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, r := range sampleRequests() {
		f.Add(r.Encode())
	}
	f.Add([]byte{byte(OpSums), 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		again, err := DecodeRequest(r.Encode())
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoding %+v: %+v, %v", r, again, err)
		}
	})
}

func FuzzDecodeReply(f *testing.F) {
	e := archive.Entry{Key: id.OfString("k"), Digest: id.OfString("d"), Day: 7}
	f.Add(appendSum([]byte{statusOK}, archive.DirSum{Count: 3}))
	f.Add(appendEntry([]byte{statusOK, 1}, e))
	f.Add(errorReply(errors.New("boom")))
	f.Add([]byte{statusNotFound})
	f.Add([]byte{statusOK, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{statusOK, 3, batchOK, 2, 'h', 'i', batchNotFound, batchOmitted})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, n := range []int{1, 3} {
			if got, err := DecodeFiles(b, n); err == nil && len(got) != n {
				t.Fatalf("%d records for %d", len(got), n)
			}
		}
		if sums, err := DecodeSums(b, 1); err == nil && len(sums) != 1 {
			t.Fatalf("%d sums", len(sums))
		}
		if ents, err := DecodeEntries(b); err == nil && len(ents) > MaxEntries {
			t.Fatalf("%d entries", len(ents))
		}
		_, _ = DecodeFile(b)
		_ = DecodeAck(b)
	})
}
