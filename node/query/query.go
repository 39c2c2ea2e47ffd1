package query

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/export"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// Protocol serves ring-wide queries: each node answers from its own
// store and the asking node merges the answers of every real node.
//
// A request is one JSON frame (Request, at most maxRequestFrame).
// For op "list" the reply is a sequence of ListBatch frames (each at most
// maxHeaderFrame), the last with Done set. For op "export" it is, per
// record, a recordHeader frame (at most maxRequestFrame) followed by one
// frame holding the record's gzip member (at most maxBodyFrame), and
// finally a recordHeader with End set, carrying the error that stopped the
// export, if any.
//
// Version 1.1.0 added each listed row's proof (its fetcher's signature
// and the witness statements its member holds): a 1.0.0 member's rows
// could not be verified, so the two do not talk.
const Protocol protocol.ID = "/herod/query/1.1.0"

// Limits of the query protocol.
const (
	// maxListVersions bounds the versions one node returns for a list
	// request, whatever the request's limit (the gateway's CDX maximum).
	maxListVersions = cdx.MaxLimit
	// listBatchSize is the number of versions (or rows) per list or
	// page reply frame: each with its proof and a URL of up to
	// canon.MaxLen, a frame stays well within maxHeaderFrame.
	listBatchSize = 250
	// queryFanout bounds the members asked at the same time by List.
	queryFanout = 16
	// MaxServing bounds the query requests a process serves at once (list
	// scans and export streams): the capacity of Service.Slots; more are
	// refused with a "busy" reply.
	MaxServing = 32
	// MaxPerMember bounds the query handlers one member runs here at once
	// (the kit's Spec.MaxPerPeer): an export runs as long as its reader
	// keeps reading, so at the kit's default, half of 2 × MaxServing, one
	// member's slow exports could hold every slot. Its further streams
	// wait for one of its own slots; a gateway with more at once is
	// answered as its earlier requests end.
	MaxPerMember = MaxServing / 4
	// exportIdle bounds the wait for one frame of an export stream, either
	// way (longer than streamTimeout; see export.Idle).
	exportIdle = export.Idle
)

// Frame limits, the node's for every protocol: a hostile peer cannot make
// a node buffer more than these.
const (
	maxRequestFrame = 64 << 10
	maxHeaderFrame  = 4 << 20
	streamTimeout   = 30 * time.Second
)

// Request is the request frame of the query protocol.
type Request struct {
	Op    string        `json:"op"` // "list", "page" or "export"
	Query archive.Query `json:"query"`
	Limit int           `json:"limit,omitempty"` // list: most versions; 0 means maxListVersions
	After string        `json:"after,omitempty"` // export: resume after this cursor
	// Revisits, in an export, asks for revisit records of the days a URL
	// was checked unchanged (archive.ExportOptions.Revisits).
	Revisits bool `json:"revisits,omitempty"`
	// Page holds the rest of an op "page" request (page.go).
	Page *pageRequest `json:"page,omitempty"`
}

// ListBatch is one reply frame of op "list".
type ListBatch struct {
	Versions []archive.Version `json:"versions,omitempty"`
	// Proofs holds, for each of Versions in order, what the asking node
	// verifies it by (verify.go).
	Proofs []Proof `json:"proofs,omitempty"`
	Done   bool    `json:"done,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// BusyError is the error of the reply to a request over the Slots limit.
const BusyError = "busy: too many queries in progress"

// Ring is what a Service needs of the ring to enumerate its real nodes;
// *ring.Ring implements it.
type Ring interface {
	// Vnodes returns this node's virtual servers.
	Vnodes() []ring.Node
	// Successors returns the owner of key and the virtual servers after
	// it, up to k distinct real nodes.
	Successors(ctx context.Context, key id.ID, k int) ([]ring.Node, error)
}

// Service answers the query protocol from a node's store (Serve) and
// asks every real node of the ring for the gateway (List, Page, Export).
// Every field but Logger must be set.
type Service struct {
	Store *archive.Store
	Self  ring.Contact // this node: asked through Store, not the network
	Ring  Ring
	// Open opens a stream of protocol p to the real node behind c, with
	// a deadline.
	Open func(ctx context.Context, c ring.Contact, p protocol.ID) (network.Stream, error)
	// Slots holds a token per query request being served; a request that
	// finds it full is refused with BusyError. The node shares one
	// (capacity MaxServing) between all its nodes in a process, because
	// the limit protects the machine's disk and CPU; handlers never wait
	// for each other, so sharing it cannot deadlock.
	Slots chan struct{}
	// Dated, if set, judges the capture times of versions other members
	// list that no statement they sent dates (witness.Service.DateAll:
	// asking the versions' holders); nil drops them.
	Dated func(ctx context.Context, vs []archive.Version) []archive.Dating
	// Replicas is k, the real nodes holding every key (the ring's
	// replication factor): another member's row is believed only from
	// one of its URL's k holders (holders.go). 0 means
	// replication.Factor.
	Replicas int
	// Now is the clock of the witness rule; nil means time.Now.
	Now        func() time.Time
	wire.Hooks // Logger, optional

	// Access, if set, is this node's access rules (archive/access): lists
	// and pages leave out the captures they do not list, exports those
	// they do not show, for this node's queries and other nodes' alike.
	Access func(url string, t time.Time) access.Decision

	dropped    atomic.Int64 // export records of other members that failed verification
	unverified atomic.Int64 // listed rows of other members that failed verification
	notHeld    atomic.Int64 // rows and export records of members not holding their URL (holders.go)
	excluded   atomic.Int64 // CDX pages of members most of whose rows failed (mergePages)
}

// Excluded returns how many times a member's CDX page was left out of
// the page's cut because more than half of its rows failed verification
// or came from a member not holding their URL (mergePages).
func (svc *Service) Excluded() int64 { return svc.excluded.Load() }

// Dropped returns how many records of other members exports left out
// because they failed verification (export.Member.Dropped).
func (svc *Service) Dropped() int64 { return svc.dropped.Load() }

// listed reports whether the access rules list v.
func (svc *Service) listed(v archive.Version) bool {
	return svc.Access == nil || svc.Access(v.URL, v.Time).Listed()
}

// hidden reports whether the access rules keep the capture of url at t
// out of exports; nil when there are no rules.
func (svc *Service) hidden() func(url string, t time.Time) bool {
	if svc.Access == nil {
		return nil
	}
	return func(url string, t time.Time) bool { return !svc.Access(url, t).Shown() }
}

// Spec declares the query protocol to the node's kit: members only, one
// request frame; an export moves the stream's deadlines itself
// (deadlineWriter), so the handler's context ends only with the node.
func (svc *Service) Spec() kit.Spec {
	return kit.Spec{ID: Protocol, Handle: svc.Serve, MaxFrame: maxRequestFrame, Deadline: streamTimeout,
		Streaming: true, MaxActive: 2 * MaxServing, MaxPerPeer: MaxPerMember}
}

// Serve serves one query request from the local store: the handler of
// Protocol.
func (svc *Service) Serve(ctx context.Context, q *kit.Request) error {
	var req Request
	if err := q.ReadJSON(maxRequestFrame, &req); err != nil {
		return err
	}
	s := q.Stream()
	_ = s.CloseRead()
	select {
	case svc.Slots <- struct{}{}:
		defer func() { <-svc.Slots }()
	default:
		// Both reply types read this as their final frame with an error.
		return q.Reply(map[string]any{"done": true, "end": true, "error": BusyError})
	}
	var err error
	switch req.Op {
	case "list":
		err = svc.serveList(ctx, req, s)
	case "export":
		err = svc.serveExport(ctx, req, &deadlineWriter{s: s})
	case "page":
		err = svc.servePage(ctx, req, s)
	default:
		err = wire.WriteJSON(s, ListBatch{Done: true, Error: fmt.Sprintf("unknown op %.20q", req.Op)})
	}
	if err != nil {
		return fmt.Errorf("query %s: %w", req.Op, err)
	}
	return nil
}

// localList returns up to limit versions of the local store selected by
// q, in CDX order (see CDXCompare). Memory stays O(limit) whatever the
// number of matches.
func (svc *Service) localList(ctx context.Context, q archive.Query, limit int) ([]archive.Version, error) {
	if limit <= 0 || limit > maxListVersions {
		limit = maxListVersions
	}
	if _, err := cdx.FromStore(q); err != nil {
		return nil, fmt.Errorf("query list: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, streamTimeout)
	defer cancel()
	var out []archive.Version
	err := svc.Store.Scan(ctx, q, func(v archive.Version) error {
		if !svc.Store.Shown(ctx, v) || !svc.listed(v) {
			return nil // unwitnessed (archive/witness.go) or not listed by the access rules
		}
		out = append(out, v)
		if len(out) >= 2*limit {
			slices.SortFunc(out, CDXCompare)
			out = out[:limit]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("query list: %w", err)
	}
	slices.SortFunc(out, CDXCompare)
	return out[:min(len(out), limit)], nil
}

// serveList answers op "list" in batches.
func (svc *Service) serveList(ctx context.Context, req Request, s network.Stream) error {
	vs, err := svc.localList(ctx, req.Query, req.Limit)
	if err != nil {
		return wire.WriteJSON(s, ListBatch{Done: true, Error: err.Error()})
	}
	for {
		b := ListBatch{Versions: vs[:min(len(vs), listBatchSize)]}
		if b.Proofs, err = svc.proofs(ctx, b.Versions); err != nil {
			return wire.WriteJSON(s, ListBatch{Done: true, Error: "query list: " + err.Error()})
		}
		vs = vs[len(b.Versions):]
		b.Done = len(vs) == 0
		if err := wire.WriteJSON(s, b); err != nil {
			return err
		}
		if b.Done {
			return nil
		}
	}
}

// CDXCompare orders versions as CDX indexes do: by SURT, then by time;
// the URL and digest break ties so the order is total.
func CDXCompare(a, b archive.Version) int {
	return cmp.Or(strings.Compare(archive.Surt(a.URL), archive.Surt(b.URL)),
		a.Time.Compare(b.Time), strings.Compare(a.URL, b.URL), a.Digest.Cmp(b.Digest))
}

// remoteList asks member c for its versions selected by q and checks each
// one: it must match q, its key must be the SHA-1 of its URL, there must
// be no more than limit, and each must come with its proof. It returns
// them unverified, with their proofs.
func (svc *Service) remoteList(ctx context.Context, c ring.Contact, q archive.Query, limit int) ([]archive.Version, []*Proof, error) {
	gq, err := cdx.FromStore(q)
	if err != nil {
		return nil, nil, err
	}
	s, err := svc.Open(ctx, c, Protocol)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	if err := wire.WriteJSON(s, Request{Op: "list", Query: q, Limit: limit}); err != nil {
		s.Reset()
		return nil, nil, fmt.Errorf("query list request: %w", err)
	}
	_ = s.CloseWrite()
	r := bufio.NewReader(s)
	var out []archive.Version
	var proofs []*Proof
	for {
		var b ListBatch
		if err := wire.ReadJSON(r, maxHeaderFrame, &b); err != nil {
			s.Reset()
			return nil, nil, fmt.Errorf("query list reply: %w", err)
		}
		if b.Error != "" {
			return nil, nil, fmt.Errorf("query list reply: %w: %.200s", errRemote, b.Error)
		}
		if len(b.Proofs) != len(b.Versions) {
			s.Reset()
			return nil, nil, fmt.Errorf("query list reply: %w: %d proofs for %d versions", errBadReply, len(b.Proofs), len(b.Versions))
		}
		for i, v := range b.Versions {
			if !gq.Contains(v) || v.Key != id.OfString(v.URL) {
				s.Reset()
				return nil, nil, fmt.Errorf("query list reply: %w: version of %.100q does not match the query", errBadReply, v.URL)
			}
			out, proofs = append(out, v), append(proofs, &b.Proofs[i])
		}
		if len(out) > limit {
			s.Reset()
			return nil, nil, fmt.Errorf("query list reply: %w: more than %d versions", errBadReply, limit)
		}
		if b.Done {
			return out, proofs, nil
		}
	}
}

// errRemote reports an error the remote node returned.
var errRemote = errors.New("node: remote error")

// errBadReply reports a member's reply that breaks the query protocol.
var errBadReply = errors.New("node: bad query reply")

// List implements the gateway's Lister: it asks every real node of the ring (at
// most queryFanout at a time) for its versions selected by q, keeps those
// that verify and that a holder of their URL lists (judge), merges them
// in CDX order (SURT, then time), drops duplicates (replicas) and keeps the
// first q.Limit. If a member fails, or the ring could not be enumerated
// completely, List returns an error naming them (wrapping ErrPartial) and
// no versions: the gateway then answers 502 rather than a silently
// incomplete index.
func (svc *Service) List(ctx context.Context, q cdx.Query) ([]archive.Version, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxListVersions {
		limit = maxListVersions
	}
	aq := q.Store()
	if _, err := cdx.FromStore(aq); err != nil {
		return nil, fmt.Errorf("node list: %w", err)
	}
	var listed []archive.Version
	var proofs []*Proof
	var by []string
	errs := svc.eachMember(ctx, func(m ring.Contact) (func(), error) {
		var vs []archive.Version
		var ps []*Proof
		var err error
		if m.Peer == svc.Self.Peer {
			vs, err = svc.localList(ctx, aq, limit)
			ps = make([]*Proof, len(vs))
		} else {
			vs, ps, err = svc.remoteList(ctx, m, aq, limit)
		}
		return func() {
			listed, proofs = append(listed, vs...), append(proofs, ps...)
			for range vs {
				by = append(by, m.Peer)
			}
		}, err
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("node list: %w: %w", ErrPartial, errors.Join(errs...))
	}
	fate, _, err := svc.judge(ctx, listed, proofs, by, false)
	if err != nil {
		return nil, fmt.Errorf("node list: %w", err)
	}
	var all []archive.Version
	for i, v := range listed {
		if fate[i] == rowKept {
			all = append(all, v)
		}
	}
	slices.SortFunc(all, CDXCompare)
	all = slices.CompactFunc(all, func(a, b archive.Version) bool {
		return a.URL == b.URL && a.Time.Equal(b.Time) && a.Digest == b.Digest
	})
	return all[:min(len(all), limit)], nil
}
