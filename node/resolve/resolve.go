package resolve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/ring"
)

// Protocol answers "versions of u" and "the capture of u at t" for URLs a
// node stores: one JSON Request, one JSON Reply and, for a capture, its
// signed WARC record (one gzip member, as replication sends it) in a
// second frame. 1.1.0 replaced 1.0.0's unsigned capture and unsigned
// versions with the record and the versions' signatures.
const Protocol protocol.ID = "/herod/archive/1.1.0"

// Limits of the protocol, the node's for every protocol: a hostile peer
// cannot make a node buffer more than these.
const (
	maxRequestFrame = 64 << 10
	maxHeaderFrame  = 4 << 20
	maxBodyFrame    = 64 << 20
	streamTimeout   = 30 * time.Second
)

// errRemote reports an error the remote node returned.
var errRemote = errors.New("node: remote error")

// Ring is what a Service needs of the ring; *ring.Ring implements it.
type Ring interface {
	// OwnerVnode returns the local virtual server that owns key, if one
	// does by this node's view.
	OwnerVnode(key id.ID) (ring.Node, bool)
	Lookup(ctx context.Context, key id.ID) (ring.Node, error)
}

// Store is what a Service needs of the archive: its own versions and
// records, and the check every record received from a peer passes
// (the one replication's imports pass: signature by the fetcher's key,
// purge book). *archive.Store implements it.
type Store interface {
	Versions(ctx context.Context, url string) ([]archive.Version, error)
	At(ctx context.Context, url string, t time.Time) (archive.Version, error)
	Read(ctx context.Context, v archive.Version) (*archive.Capture, error)
	ReadFileWithin(ctx context.Context, e archive.Entry, room func(n int64) bool) ([]byte, error)
	Provenance(ctx context.Context, v archive.Version) (string, []byte, error)
	VerifyRecord(data []byte) (*archive.Capture, id.ID, error)
	VerifySigned(v archive.Version, sig []byte) error
	Refuses(peer string) bool
	DayOf(t time.Time) int64
	Checks(ctx context.Context, url string) ([]time.Time, error)
}

var _ Store = (*archive.Store)(nil)

// Service is a node seen as the gateway's archive (Versions, Get): every
// URL is answered by its holders, the node that owns it, this one or
// another found by lookup, or a replica, and nothing a peer sends is
// served before it verified; and the server side of Protocol (Handle).
// Every field but BadFrame and Logger must be set.
type Service struct {
	Store Store
	Self  ring.Contact // this node: asked through Store, not the network
	Ring  Ring
	K     int // the replication factor: holders asked at most
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	// Gate admits a stream from a verified ring member; a stream from
	// another peer it resets and returns false.
	Gate func(s network.Stream) bool
	// Base is the context requests are served under: the node's, which
	// ends when it closes.
	Base       func() context.Context
	wire.Hooks // BadFrame and Logger, both optional

	// Access, if set, is this node's access rules (archive/access):
	// Handle lists to other nodes only the versions they list and sends
	// only the captures they show (access.go).
	Access func(url string, t time.Time) access.Decision
	// Budget bounds the bytes of records the "get" replies hold between
	// reading a record and its write: a slow reader keeps its reply, and
	// a member may have 64 of them at once. A reply that finds no room
	// waits for it until its deadline, then is answered busy. The node
	// shares one with its other replies; nil means one of
	// wire.DefaultReplyBytes of the Service's own.
	Budget     *wire.ReplyBudget
	budgetOnce sync.Once

	rejected atomic.Int64 // versions and records that failed verification
}

// budget returns Budget, made on first use when it was not set.
func (sv *Service) budget() *wire.ReplyBudget {
	sv.budgetOnce.Do(func() {
		if sv.Budget == nil {
			sv.Budget = wire.NewReplyBudget(wire.DefaultReplyBytes)
		}
	})
	return sv.Budget
}

// Stats are a Service's counters.
type Stats struct {
	// Rejected counts the versions and capture records peers sent that
	// failed verification (unsigned, forged, signed by a purged peer,
	// or not what was asked for): none was served.
	Rejected int64 `json:"rejected"`
}

// Stats returns the Service's counters.
func (sv *Service) Stats() Stats { return Stats{Rejected: sv.rejected.Load()} }

// Request asks a holder of URL for its versions or for one capture.
type Request struct {
	Op   string    `json:"op"` // "versions", "get" or "checks"
	URL  string    `json:"url"`
	Time time.Time `json:"time,omitzero"`
}

// Reply answers a Request. For "get" the version's record follows in a
// second frame (Record set).
type Reply struct {
	NotFound bool   `json:"notFound,omitempty"`
	Error    string `json:"error,omitempty"`
	// Versions answers "versions", each with its fetcher's signature.
	Versions []SignedVersion `json:"versions,omitempty"`
	// Version answers "get": the version whose record follows.
	Version archive.Version `json:"version,omitzero"`
	Record  bool            `json:"record,omitempty"`
	// Checks answers "checks": the times the holder found the URL
	// unchanged.
	Checks []time.Time `json:"checks,omitempty"`
}

// SignedVersion is a version as a holder lists it: with the signature its
// fetcher (Version.Peer) made of its URL, time and payload digest
// (archive.SignedMessage), which the asking node verifies.
type SignedVersion struct {
	archive.Version
	Signature []byte `json:"sig,omitempty"`
}

// Versions implements the gateway's Archive: the versions of url this node holds
// merged with those every other holder it can reach lists (the owner and
// its replicas, up to K real nodes, purged peers not asked) whose
// signatures verify, in time order. A version two holders list is listed
// once; no holder can hide a version another holder lists. It returns no
// versions and no error when no holder reached has any.
func (sv *Service) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	c, err := archive.CanonicalURL(url)
	if err != nil {
		return nil, err
	}
	local, lerr := sv.Store.Versions(ctx, c)
	hs, herr := sv.holders(ctx, c, sv.K)
	type answer struct {
		vs  []archive.Version
		err error
	}
	answers := make([]answer, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vs, err := sv.remoteVersions(ctx, c, h)
			answers[i] = answer{vs, err}
		}()
	}
	wg.Wait()
	out, errs, answered := local, []error{}, lerr == nil
	if lerr != nil {
		errs = append(errs, lerr)
	}
	if herr != nil {
		errs = append(errs, herr)
	}
	for _, a := range answers {
		switch {
		case a.err == nil:
			answered = true
			out = mergeVersions(out, a.vs)
		case nothing(a.err):
			answered = true
		default:
			errs = append(errs, a.err)
		}
	}
	if len(out) == 0 && !answered && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// mergeVersions adds to vs, in time order, the versions of more it lacks:
// the same capture time and payload digest is one version.
func mergeVersions(vs, more []archive.Version) []archive.Version {
	for _, v := range more {
		i, found := slices.BinarySearchFunc(vs, v, compareVersions)
		if !found {
			vs = slices.Insert(vs, i, v)
		}
	}
	return vs
}

// compareVersions orders versions by capture time, then payload digest.
func compareVersions(a, b archive.Version) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	return a.Digest.Cmp(b.Digest)
}

// Get implements the gateway's Archive: the version of url for time t — the
// newest not newer than t, or the oldest when all are newer — and its
// capture. This node's own version is weighed against the first verified
// answer of the other holders (the owner first, then its replicas up to K
// real nodes, purged peers not asked); a holder whose record fails
// verification is counted (Stats.Rejected) and the next one asked. When
// this node owns url, its own version is the answer.
func (sv *Service) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	c, err := archive.CanonicalURL(url)
	if err != nil {
		return archive.Version{}, nil, err
	}
	lv, lc, lerr := sv.localGet(ctx, c, t)
	var errs []error
	if lerr != nil && !errors.Is(lerr, archive.ErrNotFound) {
		errs = append(errs, lerr)
	}
	_, owned := sv.Ring.OwnerVnode(id.OfString(c))
	if !owned || lerr != nil {
		err := sv.eachHolder(ctx, c, sv.K, func(h ring.Contact) bool {
			v, capt, err := sv.remoteGet(ctx, c, t, h)
			if err != nil {
				if !nothing(err) {
					errs = append(errs, err)
				}
				return ctx.Err() == nil
			}
			if lerr != nil || better(v, lv, t) {
				lv, lc, lerr = v, capt, nil
			}
			return false
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case lerr == nil:
		return lv, lc, nil
	case ctx.Err() != nil:
		return archive.Version{}, nil, ctx.Err()
	case len(errs) > 0:
		return archive.Version{}, nil, errors.Join(errs...)
	}
	return archive.Version{}, nil, fmt.Errorf("%s: %w", c, archive.ErrNotFound)
}

// nothing reports whether err means a holder has nothing to show: it has
// nothing, or what it sent failed verification (counted and logged by
// then). A lie is no outage: the URL is as not found as it is when every
// holder says so.
func nothing(err error) bool {
	return errors.Is(err, archive.ErrNotFound) || errors.Is(err, errRejected)
}

// better reports whether a is a better answer than b for time t: the
// newest not newer than t, or the oldest when all are newer.
func better(a, b archive.Version, t time.Time) bool {
	aIn, bIn := !a.Time.After(t), !b.Time.After(t)
	switch {
	case aIn && bIn:
		return a.Time.After(b.Time)
	case aIn != bIn:
		return aIn
	}
	return a.Time.Before(b.Time)
}

// maxHolderSteps bounds the ring steps a walk past the owner takes
// looking for replicas on other real nodes.
const maxHolderSteps = 32

// holders returns the other holders of the canonical url: its owner and
// the owner's successors on other real nodes, up to k real nodes in all
// (this one included if it is one), less purged peers.
func (sv *Service) holders(ctx context.Context, url string, k int) ([]ring.Contact, error) {
	var hs []ring.Contact
	err := sv.eachHolder(ctx, url, k, func(c ring.Contact) bool {
		hs = append(hs, c)
		return true
	})
	return hs, err
}

// eachHolder calls f with each other holder of the canonical url in
// order, as holders lists them, until f returns false. Its error is the
// failure to find the owner.
func (sv *Service) eachHolder(ctx context.Context, url string, k int, f func(c ring.Contact) bool) error {
	key := id.OfString(url)
	owner, mine := sv.Ring.OwnerVnode(key)
	if !mine {
		var err error
		if owner, err = sv.Ring.Lookup(ctx, key); err != nil {
			return fmt.Errorf("lookup owner of %s: %w", url, err)
		}
	}
	seen := map[string]bool{}
	visit := func(c ring.Contact) bool {
		if seen[c.Peer] {
			return true
		}
		seen[c.Peer] = true
		if c.Peer == sv.Self.Peer || sv.Store.Refuses(c.Peer) {
			return true
		}
		return f(c)
	}
	if !visit(owner.Contact) {
		return nil
	}
	cur := owner
	for step := 0; step < maxHolderSteps && len(seen) < k; step++ {
		next, err := sv.Ring.Lookup(ctx, cur.ID.AddPow2(0))
		if err != nil || next.ID == owner.ID {
			return nil
		}
		cur = next
		if !visit(next.Contact) {
			return nil
		}
	}
	return nil
}

// localGet returns the newest local version of url not newer than t, or the
// oldest when all are newer, with its capture.
func (sv *Service) localGet(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	v, err := sv.localVersion(ctx, url, t)
	if err != nil {
		return archive.Version{}, nil, err
	}
	c, err := sv.Store.Read(ctx, v)
	if err != nil {
		return archive.Version{}, nil, err
	}
	return v, c, nil
}

// localVersion returns the newest local version of url not newer than t,
// or the oldest when all are newer.
func (sv *Service) localVersion(ctx context.Context, url string, t time.Time) (archive.Version, error) {
	v, err := sv.Store.At(ctx, url, t)
	if errors.Is(err, archive.ErrNotFound) {
		vs, verr := sv.Store.Versions(ctx, url)
		if verr != nil {
			return archive.Version{}, verr
		}
		if len(vs) == 0 {
			return archive.Version{}, archive.ErrNotFound
		}
		v, err = vs[0], nil
	}
	return v, err
}
