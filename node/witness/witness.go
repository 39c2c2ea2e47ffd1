package witness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Protocol asks a holder for its witness statements of up to MaxAsk
// versions: one JSON request frame, one JSON reply frame holding, for
// each version asked in order, the statements the holder keeps.
const Protocol protocol.ID = "/herod/witness/1.0.0"

// Limits of the protocol.
const (
	MaxAsk        = 64                 // versions a request names
	maxRequest    = 64 << 10           // a request frame
	maxReply      = 512 << 10          // a reply frame: 64 versions × 8 statements × ~300 bytes, and room
	maxPerVersion = 8                  // statements taken from one holder for one version
	streamTimeout = 15 * time.Second   // one exchange
	cacheSize     = 4096               // judged versions remembered (Date)
	negativeTTL   = 5 * time.Minute    // how long an unwitnessed verdict on a version held elsewhere stands
	DefaultEvery  = 10 * time.Minute   // CatchUp passes
	catchUpBatch  = MaxAsk             // undated versions per request
	catchUpMax    = 100 * catchUpBatch // versions one pass looks at
)

// Ref names a version in a request.
type Ref struct {
	URL    string    `json:"url"`
	Time   time.Time `json:"time"`
	Digest id.ID     `json:"digest"`
}

type request struct {
	Versions []Ref `json:"versions"`
}

type reply struct {
	Witnesses [][]archive.Witness `json:"witnesses"`
	Error     string              `json:"error,omitempty"`
}

// Store is what a Service needs of the archive; *archive.Store implements
// it.
type Store interface {
	Witnesses(ctx context.Context, v archive.Version) ([]archive.Witness, error)
	AddWitnesses(ctx context.Context, v archive.Version, ws []archive.Witness) (added, bad int, err error)
	Undated(ctx context.Context, cursor []byte, limit int) ([]archive.Version, []byte, error)
	Rule(member func(string) bool) archive.WitnessRule
}

var _ Store = (*archive.Store)(nil)

// Stats counts what a Service did since it started.
type Stats struct {
	Answered   int64  `json:"answered"`  // requests answered
	Fetched    int64  `json:"fetched"`   // statements added to the store from other holders
	Refused    int64  `json:"refused"`   // statements from other holders that did not verify
	Hidden     int64  `json:"hidden"`    // versions the gateway left out as unwitnessed
	AskFailed  int64  `json:"askFailed"` // requests to holders that failed
	Undated    int64  `json:"undated"`   // versions the last CatchUp pass could not date
	LastPassAt string `json:"lastPass,omitempty"`
}

// Service answers Protocol, fetches statements for this node's undated
// versions and judges versions for the gateway. Store, Self, Holders and
// Open must be set.
type Service struct {
	Store Store
	Self  ring.Contact
	// Holders returns the real nodes that hold key: its owner and
	// successors (this node may be among them).
	Holders func(ctx context.Context, key id.ID) ([]ring.Contact, error)
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Every is the interval between CatchUp passes; 0 means DefaultEvery.
	Every      time.Duration
	wire.Hooks // BadFrame and Logger, both optional

	answered, fetched, refused, hidden, askFailed, undated atomic.Int64
	lastPass                                               atomic.Pointer[time.Time]

	mu    sync.Mutex
	cache map[cacheKey]verdict
}

type cacheKey struct {
	key, digest id.ID
	time        int64
}

// verdict is a remembered judgement of a version's date: the dating, the
// statements that vouch for it (earliest first), whether its other
// holders were asked, and until when it stands (zero: for good).
type verdict struct {
	d     archive.Dating
	ws    []archive.Witness
	asked bool
	until time.Time
}

func (sv *Service) now() time.Time {
	if sv.Now != nil {
		return sv.Now()
	}
	return time.Now()
}

func (sv *Service) log() *slog.Logger { return sv.Hooks.Log() }

// Stats returns the service's counters.
func (sv *Service) Stats() Stats {
	st := Stats{
		Answered: sv.answered.Load(), Fetched: sv.fetched.Load(), Refused: sv.refused.Load(),
		Hidden: sv.hidden.Load(), AskFailed: sv.askFailed.Load(), Undated: sv.undated.Load(),
	}
	if t := sv.lastPass.Load(); t != nil {
		st.LastPassAt = t.UTC().Format(time.RFC3339)
	}
	return st
}

func versionOf(r Ref) archive.Version {
	return archive.Version{URL: r.URL, Key: id.OfString(r.URL), Time: r.Time, Digest: r.Digest}
}

func refOf(v archive.Version) Ref { return Ref{URL: v.URL, Time: v.Time, Digest: v.Digest} }

// Handle answers a member's request for statements: the stream handler
// of Protocol, registered behind the node's protocol kit, which admits
// members only and bounds the request.
func (sv *Service) Handle(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(sv.now().Add(streamTimeout))
	var req request
	if err := wire.ReadJSON(bufio.NewReader(s), maxRequest, &req); err != nil || len(req.Versions) > MaxAsk {
		sv.CountBadFrame()
		s.Reset()
		return
	}
	rep := reply{Witnesses: make([][]archive.Witness, len(req.Versions))}
	for i, r := range req.Versions {
		ws, err := sv.Store.Witnesses(context.Background(), versionOf(r))
		if err != nil {
			rep = reply{Error: "witnesses unavailable"}
			sv.log().Warn("witness: read statements", "url", r.URL, "err", err)
			break
		}
		if len(ws) > maxPerVersion {
			ws = ws[:maxPerVersion]
		}
		rep.Witnesses[i] = ws
	}
	if err := wire.WriteJSON(s, rep); err != nil {
		s.Reset()
		return
	}
	sv.answered.Add(1)
}

// Ask asks the real node c for its statements of vs (at most MaxAsk): one
// slice of statements for each, unverified.
func (sv *Service) Ask(ctx context.Context, c ring.Contact, vs []archive.Version) ([][]archive.Witness, error) {
	if len(vs) > MaxAsk {
		return nil, fmt.Errorf("witness ask: %d versions, at most %d", len(vs), MaxAsk)
	}
	req := request{Versions: make([]Ref, len(vs))}
	for i, v := range vs {
		req.Versions[i] = refOf(v)
	}
	s, err := sv.Open(ctx, c, Protocol)
	if err != nil {
		sv.askFailed.Add(1)
		return nil, fmt.Errorf("witness ask %s: %w", c.Addr, err)
	}
	defer s.Close()
	var rep reply
	err = wire.WriteJSON(s, req)
	if err == nil {
		err = wire.ReadJSON(bufio.NewReader(s), maxReply, &rep)
	}
	if err == nil && rep.Error != "" {
		err = errors.New(rep.Error)
	}
	if err == nil && len(rep.Witnesses) != len(vs) {
		err = fmt.Errorf("%d answers for %d versions", len(rep.Witnesses), len(vs))
	}
	if err != nil {
		s.Reset()
		sv.askFailed.Add(1)
		return nil, fmt.Errorf("witness ask %s: %w", c.Addr, err)
	}
	for i := range rep.Witnesses {
		if len(rep.Witnesses[i]) > maxPerVersion {
			rep.Witnesses[i] = rep.Witnesses[i][:maxPerVersion]
		}
	}
	return rep.Witnesses, nil
}

// others returns the holders of key other than this node.
func (sv *Service) others(ctx context.Context, key id.ID) []ring.Contact {
	cs, err := sv.Holders(ctx, key)
	if err != nil {
		sv.log().Debug("witness: holders", "key", key, "err", err)
		return nil
	}
	var out []ring.Contact
	seen := map[string]bool{sv.Self.Peer: true}
	for _, c := range cs {
		if !seen[c.Peer] {
			seen[c.Peer] = true
			out = append(out, c)
		}
	}
	return out
}
