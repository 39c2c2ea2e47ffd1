package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/kit"
	"github.com/herod-archive/herod/ring"
)

// Dictionaries. A replica stores a zstd record as its sender stored it
// (replicate.OpReadStored), so it needs the dictionary the record was
// compressed with. A sync that meets a dictionary its store lacks asks
// the sender for it on DictProtocol, once: concurrent requests for one
// dictionary share one fetch, and a dictionary a peer sent that failed
// verification (archive.Store.AddDictionary: its SHA-1 and id against
// its name) is not asked of that peer again for dictRetry. The store then
// keeps it in the segment of the records that use it.

// DictProtocol carries dictionary requests: one frame each way. The
// request is the dictionary's id (4 bytes, little endian) and SHA-1; the
// reply a status byte and, for dictFound, the dictionary's bytes (at most
// archive.MaxDictSize).
const DictProtocol protocol.ID = "/herod/dict/1.0.0"

const (
	// dictRequestLen is the size of a request.
	dictRequestLen = 4 + id.Size
	// dictRetry is how long a peer whose dictionary failed verification
	// is not asked for it again.
	dictRetry = 10 * time.Minute
	// dictActive bounds the dictionary requests served at once.
	dictActive = 8
)

// Reply status bytes.
const (
	dictFound    = 0
	dictNotFound = 1
)

// Dicts is what the dictionary protocol serves from and stores into;
// *archive.Store implements it.
type Dicts interface {
	// Dictionary returns the bytes of the dictionary ref names, or an
	// error wrapping archive.ErrNotFound.
	Dictionary(ref archive.DictRef) ([]byte, error)
}

// DictStats counts the dictionary protocol's work since New.
type DictStats struct {
	Fetched int64 `json:"fetched"` // dictionaries received whose hash matched their name
	Refused int64 `json:"refused"` // dictionaries received that did not
	Served  int64 `json:"served"`  // dictionaries sent to peers
}

// DictSpec declares the handler of DictProtocol for the node's kit.
func (r *Replicator) DictSpec() kit.Spec {
	return kit.Spec{ID: DictProtocol, Handle: r.serveDict, MaxFrame: dictRequestLen,
		Deadline: streamTimeout, MaxActive: dictActive}
}

// serveDict answers one dictionary request.
func (r *Replicator) serveDict(_ context.Context, q *kit.Request) error {
	req, err := q.ReadFrame(dictRequestLen)
	if err != nil {
		return err
	}
	if len(req) != dictRequestLen {
		return fmt.Errorf("%w: dictionary request of %d bytes", kit.ErrBadFrame, len(req))
	}
	ref := archive.DictRef{ID: binary.LittleEndian.Uint32(req)}
	copy(ref.Hash[:], req[4:])
	rep := []byte{dictNotFound}
	if r.cfg.Dicts != nil {
		if raw, err := r.cfg.Dicts.Dictionary(ref); err == nil {
			rep = append([]byte{dictFound}, raw...)
			r.mu.Lock()
			r.st.Dicts.Served++
			r.mu.Unlock()
		} else if !errors.Is(err, archive.ErrNotFound) {
			return err
		}
	}
	s := q.Stream()
	var w io.Writer = s
	if r.cfg.WriteReply != nil {
		w = r.cfg.WriteReply(s, len(rep))
	}
	return wire.WriteFrame(w, rep)
}

// dictFetches is what a Replicator remembers of its dictionary fetches.
type dictFetches struct {
	mu      sync.Mutex
	running map[id.ID]*dictCall    // by dictionary hash
	refused map[dictFrom]time.Time // until when not to ask again
}

// dictCall is one fetch under way; done closes when raw and err are set.
type dictCall struct {
	done    chan struct{}
	waiters int // callers waiting for it; guarded by dictFetches.mu
	raw     []byte
	err     error
}

// dictFrom is a dictionary asked of a peer.
type dictFrom struct {
	peer string
	hash id.ID
}

// fetchDict returns the bytes of the dictionary ref names, from c: once
// for all the callers that want it at the same time, and not from a peer
// that sent a forged copy within dictRetry. Bytes whose SHA-1 is not
// ref's are refused (an error wrapping archive.ErrCorrupt); the caller's
// store verifies the rest as it adds them.
func (r *Replicator) fetchDict(ctx context.Context, c ring.Contact, ref archive.DictRef) ([]byte, error) {
	f := &r.dicts
	from := dictFrom{peer: c.Peer, hash: ref.Hash}
	f.mu.Lock()
	if until, ok := f.refused[from]; ok && time.Now().Before(until) {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: %s sent a forged copy of dictionary %s", archive.ErrCorrupt, c.Peer, ref)
	}
	if call := f.running[ref.Hash]; call != nil {
		call.waiters++
		f.mu.Unlock()
		select {
		case <-call.done:
			return call.raw, call.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	call := &dictCall{done: make(chan struct{})}
	if f.running == nil {
		f.running, f.refused = map[id.ID]*dictCall{}, map[dictFrom]time.Time{}
	}
	f.running[ref.Hash] = call
	f.mu.Unlock()

	call.raw, call.err = r.dictFetch(ctx, c, ref)
	if call.err == nil && id.Sum(call.raw) != ref.Hash {
		call.raw, call.err = nil, fmt.Errorf("%w: dictionary %s from %s: its bytes do not hash to its name",
			archive.ErrCorrupt, ref, c.Peer)
	}
	f.mu.Lock()
	delete(f.running, ref.Hash)
	if errors.Is(call.err, archive.ErrCorrupt) {
		f.refused[from] = time.Now().Add(dictRetry)
	}
	f.mu.Unlock()
	close(call.done)
	r.mu.Lock()
	switch {
	case call.err == nil:
		r.st.Dicts.Fetched++
	case errors.Is(call.err, archive.ErrCorrupt):
		r.st.Dicts.Refused++
	}
	r.mu.Unlock()
	if errors.Is(call.err, archive.ErrCorrupt) {
		r.log.Warn("a peer sent a forged zstd dictionary", "peer", c.Peer, "dict", ref.String())
	}
	return call.raw, call.err
}

// dictFetch asks c for the dictionary ref names on DictProtocol.
func (r *Replicator) dictFetch(ctx context.Context, c ring.Contact, ref archive.DictRef) ([]byte, error) {
	s, err := r.cfg.Open(ctx, c, DictProtocol)
	if err != nil {
		return nil, fmt.Errorf("dictionary request: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	req := binary.LittleEndian.AppendUint32(nil, ref.ID)
	if err := wire.WriteFrame(s, append(req, ref.Hash[:]...)); err != nil {
		s.Reset()
		return nil, fmt.Errorf("dictionary request: %w", err)
	}
	_ = s.CloseWrite()
	var in io.Reader = s
	if r.cfg.ReadReply != nil {
		in = r.cfg.ReadReply(ctx, s)
	}
	rep, err := wire.ReadFrame(bufio.NewReader(in), 1+archive.MaxDictSize)
	if err != nil {
		s.Reset()
		return nil, fmt.Errorf("dictionary reply: %w", err)
	}
	switch {
	case len(rep) > 0 && rep[0] == dictFound:
		return rep[1:], nil
	case len(rep) == 1 && rep[0] == dictNotFound:
		return nil, fmt.Errorf("dictionary %s: %s does not hold it", ref, c.Peer)
	default:
		return nil, fmt.Errorf("%w: dictionary reply from %s malformed", archive.ErrCorrupt, c.Peer)
	}
}
