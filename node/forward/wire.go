package forward

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Protocol is the links protocol: one hop of a ring walk.
//
//	request  frame 1: JSON Header
//	         frame 2: zstd of the URLs, sorted, separated by '\n'
//	reply    frame 1: JSON Reply, with the recipient's successors
//
// URLs are sorted lexicographically inside a batch (the walk's order by
// key is of no use to the recipient), so that URLs of one host sit together
// and compress well.
const Protocol protocol.ID = "/herod/links/1.0.0"

// Header is frame 1 of a links request.
type Header struct {
	VS      int  `json:"vs"`                // recipient virtual server index
	Hops    int  `json:"hops,omitempty"`    // times passed on by non-owners
	Replica bool `json:"replica,omitempty"` // links of a predecessor's range
	// Known asks the recipient to remember the URLs without crawling them
	// (the node's known-URL sharing): no stored version carries them to
	// the range's next owner.
	Known bool `json:"known,omitempty"`
	Req   bool `json:"req,omitempty"` // page requisites (Batch.Requisites)
	// Reforward, when set, announces that the sender took over this
	// span: the recipient re-forwards the links of its pages into it
	// (reforward.go); the batch carries no URL.
	Reforward *Span `json:"reforward,omitempty"`
	N         int   `json:"n"` // number of URLs in frame 2
	// Want and Next select the successors of the reply (Batch.Want);
	// a sender that sets neither gets ReplySuccessors of them.
	Want int   `json:"want,omitempty"`
	Next id.ID `json:"next,omitzero"`
}

// Reply is the reply frame of a links request.
type Reply struct {
	Accepted   int         `json:"accepted"`
	Error      string      `json:"error,omitempty"`
	Successors []ring.Node `json:"succ,omitempty"`
}

// Limits of the links protocol.
const (
	MaxHeader        = 4 << 10  // frame 1 of a request, and the base of a reply's bound
	MaxBody          = 8 << 20  // frame 2, compressed
	maxLinksExpanded = 64 << 20 // decompressed: a zstd bomb stops here
	maxLinksPerBatch = 500_000
	// ReplySuccessors is how many successors a recipient returns: enough
	// for the walk to step over stretches of the ring without links.
	ReplySuccessors = 4
	// MaxReply bounds a reply frame.
	MaxReply = MaxHeader + ReplySuccessors*512
)

// zenc compresses batches at zstd's default level: on the bench site's
// sorted URLs its output is 1.5% larger than SpeedBetterCompression's
// at 100 URLs and 7% at 2,000, for a quarter to a twentieth of the CPU
// (issue 23).
var zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))

// maxLinksRatio bounds the content size a batch's frame declares that
// DecodeLinks allocates at once, as a multiple of the frame's bytes:
// sorted URLs compress 25 times at most on the bench site (a declared
// size beyond grows as it arrives).
const maxLinksRatio = 64

// maxLinksWindow bounds the zstd window a batch may use (the decoder's
// history, allocated per frame): zenc's is at most 8 MiB.
const maxLinksWindow = 8 << 20

// zdecs holds stream decoders of batches. A stream decoder writes only
// what the frame's blocks hold, as they are decoded, into wire.ReadAll's
// buffer: the content size a frame declares is never allocated ahead.
var zdecs = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxLinksWindow), zstd.WithDecoderMaxMemory(maxLinksExpanded))
	if err != nil {
		panic(err) // the options are constant
	}
	return d
}}

// EncodeLinks compresses urls as frame 2 of a links request.
func EncodeLinks(urls []string) []byte {
	s := slices.Clone(urls)
	slices.Sort(s)
	return zenc.EncodeAll([]byte(strings.Join(s, "\n")), nil)
}

// DecodeLinks reverses EncodeLinks, refusing more than n URLs, and more
// bytes than n URLs of canon.MaxLen may hold, or 64 MiB, decompressed:
// the output is cut there, before it is allocated (wire.ReadAll).
func DecodeLinks(b []byte, n int) ([]string, error) {
	if n < 0 || n > maxLinksPerBatch {
		return nil, fmt.Errorf("links: %d URLs in one batch", n)
	}
	limit := min(int64(maxLinksExpanded), int64(n)*(canon.MaxLen+1))
	size, err := checkLinksFrame(b, limit)
	if err != nil {
		return nil, err
	}
	d := zdecs.Get().(*zstd.Decoder)
	defer zdecs.Put(d)
	if err := d.Reset(bytes.NewReader(b)); err != nil {
		return nil, fmt.Errorf("links: decompress: %w", err)
	}
	defer d.Reset(nil) // drops the reference to b
	raw, err := wire.ReadAllSized(d, limit, min(size, maxLinksRatio*int64(len(b))))
	if err != nil {
		return nil, fmt.Errorf("links: decompress: %w", err)
	}
	if n == 0 {
		if len(raw) != 0 {
			return nil, errors.New("links: data in an empty batch")
		}
		return nil, nil
	}
	// The URLs are substrings of raw, which nothing writes from here on
	// (as strings.Builder does): a copy would double the batch's memory.
	out := strings.Split(unsafe.String(unsafe.SliceData(raw), len(raw)), "\n")
	if len(out) != n {
		return nil, fmt.Errorf("links: header says %d URLs, body has %d", n, len(out))
	}
	return out, nil
}

// checkLinksFrame refuses a batch whose first zstd frame declares more
// content than limit, or a window (the history the decoder allocates
// before the first block) larger than limit: EncodeLinks writes one
// frame whose window is at most its content. Later frames, which no
// honest sender writes, are bounded by maxLinksWindow and limit.
// It returns the content size the frame declares, 0 if none.
func checkLinksFrame(b []byte, limit int64) (int64, error) {
	if len(b) == 0 {
		return 0, nil // an empty batch (the decoder refuses it if n > 0)
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return 0, fmt.Errorf("links: decompress: %w", err)
	}
	lim := uint64(max(limit, 1<<10)) // the smallest window a frame can state
	switch {
	case h.HasFCS && h.FrameContentSize > uint64(limit):
		return 0, fmt.Errorf("links: frame declares %d bytes, limit %d: %w", h.FrameContentSize, limit, wire.ErrTooLarge)
	case !h.SingleSegment && h.WindowSize > lim:
		return 0, fmt.Errorf("links: frame window of %d bytes, limit %d: %w", h.WindowSize, lim, wire.ErrTooLarge)
	case h.HasFCS:
		return int64(h.FrameContentSize), nil
	}
	return 0, nil
}

// PickSuccessors selects from succs, the successor list of the virtual
// server self, what want asks for: the first ReplySuccessors (WantAll),
// none (WantNone), or only the one that owns next, searched in the whole
// list, none if the list does not reach it (WantNext).
func PickSuccessors(self id.ID, succs []ring.Node, want int, next id.ID) []ring.Node {
	switch want {
	case WantAll:
		return succs[:min(len(succs), ReplySuccessors)]
	case WantNext:
		if o, ok := nextOwner(self, succs, next); ok {
			return []ring.Node{o}
		}
	}
	return nil
}
