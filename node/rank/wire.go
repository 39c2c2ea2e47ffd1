package rank

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/wire"
)

// Protocol is the rank protocol, one request per stream:
//
//	request  frame 1: JSON Header
//	         frame 2: the body of its op (may be empty)
//	reply    frame 1: JSON Reply
//	         frame 2: the reply's body (may be empty)
//
// Bodies: "register" sends zstd of URLs separated by '\n' and gets back
// one little-endian uint32 index per URL; "contrib" sends pairs of a
// uvarint index delta (indices ascending) and a little-endian float64.
const Protocol protocol.ID = "/herod/rank/1.0.0"

// Ops of the protocol.
const (
	OpPrepare  = "prepare"
	OpRegister = "register"
	OpCount    = "count"
	OpStep     = "step"
	OpContrib  = "contrib"
	OpFinish   = "finish"
)

// Header is frame 1 of a request.
type Header struct {
	Op      string  `json:"op"`
	Run     string  `json:"run"`
	Day     int64   `json:"day,omitempty"`
	Damping float64 `json:"d,omitempty"`
	Step    int     `json:"step,omitempty"`
	N       int64   `json:"nv,omitempty"`     // vertices ring-wide (step, finish)
	Dangle  float64 `json:"dangle,omitempty"` // dangling mass of the previous step
	Count   int     `json:"n,omitempty"`      // items in frame 2
}

// Reply is frame 1 of a reply.
type Reply struct {
	Error    string   `json:"error,omitempty"`
	Vertices int64    `json:"vertices,omitempty"`
	Edges    int64    `json:"edges,omitempty"`
	Dangle   float64  `json:"dangle,omitempty"`
	Delta    float64  `json:"delta,omitempty"` // L1 change of this member's ranks
	Sum      float64  `json:"sum,omitempty"`
	Bytes    int64    `json:"bytes,omitempty"` // request and reply bytes this member sent to others for the op
	Count    int      `json:"n,omitempty"`     // items in frame 2
	Rank     float64  `json:"rank,omitempty"`  // OpGet's answer
	Info     *RunInfo `json:"info,omitempty"`  // the run OpGet's answer comes from
}

// Limits of the protocol.
const (
	MaxHeader   = 4 << 10
	MaxBody     = 8 << 20 // frame 2, either way
	MaxURLs     = 100_000 // URLs in one register
	MaxContribs = MaxBody / 9
	maxExpanded = 64 << 20
)

var errRemote = errors.New("rank: remote error")

var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(2), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(maxExpanded), zstd.WithDecoderMaxWindow(8<<20))
)

func encodeURLs(urls []string) []byte {
	return zenc.EncodeAll([]byte(strings.Join(urls, "\n")), nil)
}

func decodeURLs(b []byte, n int) ([]string, error) {
	if n <= 0 || n > MaxURLs {
		return nil, fmt.Errorf("rank: %d URLs in one register", n)
	}
	limit := int64(n) * (canon.MaxLen + 1)
	var h zstd.Header
	if err := h.Decode(b); err != nil {
		return nil, fmt.Errorf("rank: decompress: %w", err)
	}
	if h.HasFCS && h.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("rank: frame declares %d bytes: %w", h.FrameContentSize, wire.ErrTooLarge)
	}
	raw, err := zdec.DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("rank: decompress: %w", err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("rank: %d bytes decompressed: %w", len(raw), wire.ErrTooLarge)
	}
	out := strings.Split(string(raw), "\n")
	if len(out) != n {
		return nil, fmt.Errorf("rank: header says %d URLs, body has %d", n, len(out))
	}
	return out, nil
}

func encodeIndices(ix []uint32) []byte {
	b := make([]byte, 4*len(ix))
	for i, v := range ix {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func decodeIndices(b []byte, n int) ([]uint32, error) {
	if len(b) != 4*n {
		return nil, fmt.Errorf("rank: %d index bytes for %d URLs", len(b), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out, nil
}

// contrib is rank sent to one vertex.
type contrib struct {
	idx uint32
	v   float64
}

// encodeContribs writes cs, sorted by index, as frame 2 of a contrib.
func encodeContribs(cs []contrib) []byte {
	b := make([]byte, 0, 10*len(cs))
	var prev uint32
	for i, c := range cs {
		d := c.idx - prev
		if i == 0 {
			d = c.idx
		}
		b = binary.AppendUvarint(b, uint64(d))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.v))
		prev = c.idx
	}
	return b
}

// decodeContribs reverses encodeContribs, refusing anything but n pairs
// of strictly ascending indices below limit, with finite values.
func decodeContribs(b []byte, n int, limit uint32) ([]contrib, error) {
	if n < 0 || n > MaxContribs {
		return nil, fmt.Errorf("rank: %d contributions", n)
	}
	out := make([]contrib, 0, n)
	r := bytes.NewReader(b)
	var idx uint64
	for i := range n {
		d, err := binary.ReadUvarint(r)
		if err != nil || (i > 0 && d == 0) {
			return nil, fmt.Errorf("rank: contribution %d: bad index", i)
		}
		idx += d
		if idx >= uint64(limit) {
			return nil, fmt.Errorf("rank: contribution %d: index %d of %d vertices", i, idx, limit)
		}
		var f [8]byte
		if _, err := io.ReadFull(r, f[:]); err != nil {
			return nil, fmt.Errorf("rank: contribution %d: short", i)
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(f[:]))
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("rank: contribution %d: value %v", i, v)
		}
		out = append(out, contrib{uint32(idx), v})
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("rank: %d bytes after %d contributions", r.Len(), n)
	}
	return out, nil
}
