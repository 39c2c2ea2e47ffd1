package replicate

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Op is the first byte of a request.
type Op byte

// Operations of the replication protocol.
const (
	// OpSums asks for the DirSums of the n (1..MaxFanout) equal
	// consecutive sub-ranges of (a, b] (a == b: the whole ring) that Split
	// computes; the reply holds the n sums in ring order. n == 1 asks for
	// the sum of (a, b] itself.
	OpSums Op = 1
	// OpEntries asks for the names of the files in (a, b]; the reply holds
	// at most MaxEntries of them or an error.
	OpEntries Op = 2
	// OpRead asks for the verified bytes of one version file.
	OpRead Op = 3
	// OpPull asks the receiver to pull the range (a, b] from the sender,
	// whose ring contact the request names: how an owner tells its
	// replicas that they should hold its range.
	OpPull Op = 4
	// OpReadBatch asks for the verified bytes of up to MaxBatch records
	// in one round trip; the reply answers each in order: its bytes, not
	// found, an error, or "omitted" once the reply would pass MaxReply
	// (the client asks for those again).
	OpReadBatch Op = 5
	// OpOffer tells the receiver that the sender, the owner of (a, b],
	// has just stored the records it names (1..MaxBatch, all in (a, b]):
	// the receiver, one of the range's replicas, verifies the request as
	// it verifies OpPull, reads them from the sender (OpReadBatch) and
	// imports them before it answers, so that the answer means the
	// copies exist. How an owner pushes new versions within seconds
	// instead of waiting for the next round.
	OpOffer Op = 6
	// OpReadStored is OpReadBatch for records as the peer stores them
	// (archive.Store.ReadStored): a gzip member, or a zstd frame behind a
	// frame naming its dictionary, which the receiver stores as it is,
	// fetching the dictionary once if it lacks it.
	OpReadStored Op = 7
	// OpOfferStored is OpOffer carrying the offered records themselves,
	// as the sender stores them (as OpReadStored answers), up to
	// MaxOfferBytes in all: the receiver imports those from the request
	// and reads from the sender only the ones it left out, so that a
	// push costs one round trip instead of two. Import verifies carried
	// records exactly as read ones.
	OpOfferStored Op = 8
	// OpHandOff is OpOfferStored from a node that holds the records but
	// is none of their holders (it stored them outside its ranges, or
	// kept them from a role it lost), to their owner: B is one of the
	// receiver's virtual servers by the sender's view and A is sent as
	// B; From names the sender. The receiver copies the records that lie
	// in its own range of B (carried, or read from the sender), each
	// verified by Import, and answers once it holds them all; its push
	// and rounds then bring them to the range's replicas. How a version
	// that only a non-holder stored reaches its k holders: rounds compare
	// an owner with its replicas only.
	OpHandOff Op = 9
)

// Protocol limits: a hostile peer cannot make either side buffer or
// compute more than these per message.
const (
	// MaxFanout bounds the number of sums in one OpSums request.
	MaxFanout = 16
	// MaxEntries bounds the entries in one OpEntries reply.
	MaxEntries = 4096
	// MaxBatch bounds the entries of one OpReadBatch request.
	MaxBatch = 64
	// MaxRequest bounds an encoded request (an OpOffer of MaxBatch
	// records with the longest contact is the largest, about 4.2 KiB),
	// except OpOfferStored, which may carry MaxOfferBytes of records more.
	MaxRequest = 8 << 10
	// MaxOfferBytes bounds the records one OpOfferStored carries, and
	// MaxCarried each of them; a sender offers the others by name only.
	MaxOfferBytes = 512 << 10
	MaxCarried    = 64 << 10
	// MaxOfferRequest bounds an encoded OpOfferStored request: a request
	// of MaxRequest, the records, and a status and length for each.
	MaxOfferRequest = MaxRequest + MaxOfferBytes + MaxBatch*(1+binary.MaxVarintLen32)
	// MaxReply bounds an encoded reply (a version file plus a status byte).
	MaxReply = 64 << 20
	// maxText bounds strings in messages (error texts, contacts).
	maxText = 512
)

// unknownOp is the text of the refusal of an operation the receiver does
// not know; a Client that meets it for OpReadStored falls back to
// OpReadBatch.
const unknownOp = "unknown op"

// Reply status bytes.
const (
	statusOK       = 0
	statusError    = 1
	statusNotFound = 2
)

// Errors of the protocol.
var (
	// ErrProtocol reports a malformed request or reply.
	ErrProtocol = errors.New("replicate: protocol error")
	// ErrRemote reports an error the peer answered with.
	ErrRemote = errors.New("replicate: remote error")
)

// Request is one decoded request. Which fields are set depends on Op.
type Request struct {
	Op    Op
	N     int           // OpSums: number of sub-ranges
	A, B  id.ID         // OpSums, OpEntries, OpPull: the range (A, B]
	Entry archive.Entry // OpRead
	// Entries are the records an OpReadBatch or OpReadStored asks for or
	// an OpOffer names (1..MaxBatch).
	Entries []archive.Entry
	// Carried holds, for OpOfferStored, the stored bytes of each entry
	// the request carries (nil for one it names only), in Entries' order;
	// unverified until imported.
	Carried [][]byte
	From    Contact // OpPull, OpOffer: whom to pull from
}

// Contact names a ring member: its libp2p peer id, ring address and the
// index of the virtual server whose range a pull request is about.
type Contact struct {
	Peer  string
	Addr  string
	Index int
}

// Encode returns the request's wire form.
func (r Request) Encode() []byte {
	b := []byte{byte(r.Op)}
	switch r.Op {
	case OpSums:
		b = binary.AppendUvarint(append(append(b, r.A[:]...), r.B[:]...), uint64(r.N))
	case OpEntries:
		b = append(append(b, r.A[:]...), r.B[:]...)
	case OpRead:
		b = appendEntry(b, r.Entry)
	case OpReadBatch, OpReadStored:
		b = binary.AppendUvarint(b, uint64(len(r.Entries)))
		for _, e := range r.Entries {
			b = appendEntry(b, e)
		}
	case OpPull, OpOffer, OpOfferStored, OpHandOff:
		b = append(append(b, r.A[:]...), r.B[:]...)
		b = appendString(b, r.From.Peer)
		b = appendString(b, r.From.Addr)
		b = binary.AppendUvarint(b, uint64(r.From.Index))
		if r.Op != OpPull {
			b = binary.AppendUvarint(b, uint64(len(r.Entries)))
			for _, e := range r.Entries {
				b = appendEntry(b, e)
			}
		}
		if carries(r.Op) {
			for i := range r.Entries {
				var data []byte
				if i < len(r.Carried) {
					data = r.Carried[i]
				}
				if data == nil {
					b = append(b, carriedNone)
					continue
				}
				b = append(b, carriedRecord)
				b = binary.AppendUvarint(b, uint64(len(data)))
				b = append(b, data...)
			}
		}
	}
	return b
}

// carries reports whether requests of op may carry records (and so pass
// MaxRequest): OpOfferStored and OpHandOff.
func carries(op Op) bool { return op == OpOfferStored || op == OpHandOff }

// The status of each entry of an OpOfferStored request: its bytes
// follow, or it is named only.
const (
	carriedNone   = 0
	carriedRecord = 1
)

// DecodeRequest parses a request. It never panics on any input.
func DecodeRequest(b []byte) (Request, error) {
	if len(b) > MaxRequest && (len(b) > MaxOfferRequest || !carries(Op(b[0]))) {
		return Request{}, fmt.Errorf("%w: request of %d bytes", ErrProtocol, len(b))
	}
	d := decoder{b: b}
	r := Request{Op: Op(d.byte())}
	switch r.Op {
	case OpSums:
		r.A, r.B = d.id(), d.id()
		n := d.uvarint()
		if d.err == nil && (n < 1 || n > MaxFanout || Split(r.A, r.B, int(n)) == nil) {
			return Request{}, fmt.Errorf("%w: %d sums", ErrProtocol, n)
		}
		r.N = int(n)
	case OpEntries:
		r.A, r.B = d.id(), d.id()
	case OpRead:
		r.Entry = d.entry()
	case OpReadBatch, OpReadStored:
		n := d.uvarint()
		if d.err == nil && (n < 1 || n > MaxBatch) {
			return Request{}, fmt.Errorf("%w: batch of %d", ErrProtocol, n)
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			r.Entries = append(r.Entries, d.entry())
		}
	case OpPull, OpOffer, OpOfferStored, OpHandOff:
		r.A, r.B = d.id(), d.id()
		r.From.Peer, r.From.Addr = d.string(), d.string()
		idx := d.uvarint()
		if idx > 1<<16 {
			d.fail("index")
		}
		r.From.Index = int(idx)
		if r.Op != OpPull {
			n := d.uvarint()
			if d.err == nil && (n < 1 || n > MaxBatch) {
				return Request{}, fmt.Errorf("%w: offer of %d", ErrProtocol, n)
			}
			for i := uint64(0); i < n && d.err == nil; i++ {
				r.Entries = append(r.Entries, d.entry())
			}
		}
		if carries(r.Op) && d.err == nil {
			r.Carried = d.carried(len(r.Entries))
		}
	default:
		return Request{}, fmt.Errorf("%w: %s %d", ErrProtocol, unknownOp, r.Op)
	}
	if err := d.end(); err != nil {
		return Request{}, err
	}
	return r, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendEntry(b []byte, e archive.Entry) []byte {
	b = append(append(b, e.Key[:]...), e.Digest[:]...)
	b = binary.AppendVarint(b, e.Day)
	return binary.AppendUvarint(b, uint64(e.Seq))
}

func appendSum(b []byte, s archive.DirSum) []byte {
	return binary.AppendUvarint(append(b, s.Sum[:]...), uint64(s.Count))
}

// decoder reads fields from b, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrProtocol, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("message")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) id() id.ID {
	var x id.ID
	if d.err != nil || len(d.b) < id.Size {
		d.fail("id")
		return x
	}
	copy(x[:], d.b)
	d.b = d.b[id.Size:]
	return x
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > maxText || n > uint64(len(d.b)) {
		d.fail("string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) entry() archive.Entry {
	e := archive.Entry{Key: d.id(), Digest: d.id(), Day: d.varint()}
	seq := d.uvarint()
	if seq > 1<<20 {
		d.fail("sequence")
	}
	e.Seq = int(seq)
	return e
}

func (d *decoder) sum() archive.DirSum {
	s := archive.DirSum{Sum: d.id()}
	c := d.uvarint()
	if c > 1<<62 {
		d.fail("count")
	}
	s.Count = int64(c)
	return s
}

// carried reads the records an OpOfferStored request carries for its n
// entries: each at most MaxCarried bytes, MaxOfferBytes in all.
func (d *decoder) carried(n int) [][]byte {
	out := make([][]byte, n)
	total := 0
	for i := 0; i < n && d.err == nil; i++ {
		switch d.byte() {
		case carriedNone:
		case carriedRecord:
			k := d.uvarint()
			if d.err != nil || k < 1 || k > MaxCarried || k > uint64(len(d.b)) {
				d.fail("carried record")
				break
			}
			if total += int(k); total > MaxOfferBytes {
				d.fail("carried records' size")
				break
			}
			out[i] = d.b[:k:k]
			d.b = d.b[k:]
		default:
			d.fail("carried status")
		}
	}
	return out
}

// end reports the first error, or an error if bytes are left over.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}
