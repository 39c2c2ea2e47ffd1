package links

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// DefaultPerTarget is Config.PerTarget when zero.
const DefaultPerTarget = 1000

// Key prefixes of the index's database.
const (
	pLink  = 'l' // l target 0 source 0 from(8) → stored (stored.go)
	pCount = 'n' // n target → uint32 records kept (written by older indexes; no longer read: put.go)
	pMore  = 'x' // x target → uint32 records refused over the cap
	pState = 'o' // o source → the Indexer's sourceState (indexer.go)
	pRead  = 'r' // r key(20) → the last version read of the source of that archive key (marks.go)
)

// Config configures an Index.
type Config struct {
	// PerTarget bounds the records kept for one target; those beyond are
	// counted (Result.More). Zero means DefaultPerTarget.
	PerTarget int
	// Now is the clock Put refuses future records by; nil means
	// time.Now.
	Now func() time.Time
	// Logger receives what goes wrong in the background (the count of
	// Open); nil discards it.
	Logger *slog.Logger
}

// Index is the target side of the link index, in goleveldb: the records
// of the links that point to the URLs this node holds.
type Index struct {
	db  *leveldb.DB
	cfg Config
	mu  sync.Mutex // serializes Puts: a Put's reads and its write are one step
	// held bounds the records held per target (heldbound.go); nil until
	// the count of the index that Open starts is done, and for good when
	// it failed. pending counts the records Puts store meanwhile; the
	// count adds them when it ends. Both are guarded by mu.
	held, pending *heldBound
	byKey, walked int           // targets of Puts read by key and walked (tests)
	stop          chan struct{} // closed by Close: the count stops
	counted       chan struct{} // closed when the count ends
	closeOnce     sync.Once
	closeErr      error
}

// Open opens or creates the index in dir. It counts the records held
// per target in the background (a walk of the index's keys: with the
// open, 1.06 CPU-s for 2.2 M records in BenchmarkIndexPut); Puts walk
// their targets until it is done.
func Open(dir string, cfg Config) (*Index, error) {
	if cfg.PerTarget <= 0 {
		cfg.PerTarget = DefaultPerTarget
	}
	db, err := leveldb.OpenFile(dir, indexOptions())
	if err != nil {
		return nil, fmt.Errorf("links open: %w", err)
	}
	x := &Index{db: db, cfg: cfg, pending: newHeldBound(), stop: make(chan struct{}), counted: make(chan struct{})}
	snap, err := db.GetSnapshot()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("links open: %w", err)
	}
	go x.countHeld(snap)
	return x, nil
}

// countHeld counts the records of snap (taken when pending was empty)
// per target, adds pending's and makes the sum the index's bound. A
// key of another form or a read error leaves the index without one
// (every Put walks its targets): a record not counted would let a
// target past its cap.
func (x *Index) countHeld(snap *leveldb.Snapshot) {
	defer close(x.counted)
	defer snap.Release()
	if countHook != nil {
		countHook()
	}
	h := &heldBound{seed: x.pending.seed, c: make([]uint16, heldSlots)}
	it := snap.NewIterator(&util.Range{Start: []byte{pLink}, Limit: []byte{pLink + 1}}, nil)
	defer it.Release()
	var cur []byte
	n := 0
	for i := 0; it.Next(); i++ {
		if i%4096 == 0 {
			select {
			case <-x.stop:
				return
			default:
			}
		}
		t := keyTarget(it.Key())
		if t == nil {
			x.countFailed(fmt.Errorf("malformed key %q", it.Key()))
			return
		}
		if !bytes.Equal(t, cur) {
			h.add(string(cur), n)
			cur, n = append(cur[:0], t...), 0
		}
		n++
	}
	if err := it.Error(); err != nil {
		x.countFailed(err)
		return
	}
	h.add(string(cur), n)
	x.mu.Lock()
	h.merge(x.pending)
	x.held, x.pending = h, nil
	x.mu.Unlock()
}

// countFailed logs that the count of Open failed: Puts then walk every
// target for as long as the index is open (the same records kept and
// refused, at a walk's cost).
func (x *Index) countFailed(err error) {
	if x.cfg.Logger != nil {
		x.cfg.Logger.Warn("link index: counting the records held per target failed; every put walks its targets until the next open", "err", err)
	}
}

// countHook, when set (tests), runs as the count of Open starts.
var countHook func()

// Close stops the count of Open and closes the database.
func (x *Index) Close() error {
	x.closeOnce.Do(func() {
		close(x.stop)
		<-x.counted
		x.closeErr = x.db.Close()
	})
	return x.closeErr
}

func linkPrefix(target string) []byte {
	b := make([]byte, 0, len(target)+2)
	b = append(b, pLink)
	b = append(b, target...)
	return append(b, 0)
}

func linkKey(r Record) []byte {
	b := linkPrefix(r.Target)
	b = append(b, r.Source...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, uint64(r.From.UnixNano()))
}

func countKey(p byte, target string) []byte { return append([]byte{p}, target...) }

func (x *Index) getCount(k []byte) (uint32, error) {
	v, err := x.db.Get(k, nil)
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("links count: %w", err)
	case len(v) != 4:
		return 0, fmt.Errorf("links count: %d bytes", len(v))
	}
	return binary.BigEndian.Uint32(v), nil
}

// Result is the answer to "which pages linked to Target".
type Result struct {
	Target  string   `json:"url"`
	Records []Record `json:"links"`
	// More counts the records of the target refused over the index's
	// cap (Config.PerTarget) on this holder; their sources are unknown.
	More int `json:"more,omitempty"`
	// Hidden counts the records left out by Filter (access rules and
	// purges).
	Hidden int `json:"hidden,omitempty"`
}

// Filter tells whether a record may be shown: false for a source hidden
// by access rules or covered by a purge at the record's From.
type Filter func(source string, from time.Time) bool

// Links returns the records of target live at at (all if at is zero),
// at most limit (0: no bound), sorted by source then From, leaving out
// those keep refuses (nil keeps all).
func (x *Index) Links(ctx context.Context, target string, at time.Time, limit int, keep Filter) (Result, error) {
	res := Result{Target: target, Records: []Record{}}
	it := x.db.NewIterator(util.BytesPrefix(linkPrefix(target)), nil)
	defer it.Release()
	pre := len(linkPrefix(target))
	for it.Next() {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("links: %w", err)
		}
		k := it.Key()[pre:]
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) != i+9 {
			return Result{}, fmt.Errorf("links: bad key %q", it.Key())
		}
		s, err := decodeStored(it.Value())
		if err != nil {
			return Result{}, fmt.Errorf("links: %w", err)
		}
		r := Record{Target: target, Source: string(k[:i]), Anchor: s.Anchor, Until: s.Until, Seen: s.Seen,
			From: time.Unix(0, int64(binary.BigEndian.Uint64(k[i+1:]))).UTC()}
		if !r.LiveAt(at) {
			continue
		}
		if keep != nil && !keep(r.Source, r.From) {
			res.Hidden++
			continue
		}
		res.Records = append(res.Records, r)
	}
	if err := it.Error(); err != nil {
		return Result{}, fmt.Errorf("links: %w", err)
	}
	more, err := x.getCount(countKey(pMore, target))
	if err != nil {
		return Result{}, err
	}
	res.More = int(more)
	Sort(res.Records)
	if limit > 0 && len(res.Records) > limit {
		res.More += len(res.Records) - limit
		res.Records = res.Records[:limit]
	}
	return res, nil
}

// Sort orders records by source, then From.
func Sort(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return a.From.Compare(b.From)
	})
}

// Merge merges the answers of several holders of one target: a record
// held by more than one is kept once, with the latest Seen; More and
// Hidden are the largest any holder reported.
func Merge(rs ...Result) Result {
	var out Result
	best := map[string]Record{}
	for _, r := range rs {
		if out.Target == "" {
			out.Target = r.Target
		}
		out.More = max(out.More, r.More)
		out.Hidden = max(out.Hidden, r.Hidden)
		for _, rec := range r.Records {
			k := string(linkKey(rec))
			if old, ok := best[k]; !ok || rec.Seen.After(old.Seen) {
				best[k] = rec
			}
		}
	}
	out.Records = make([]Record, 0, len(best))
	for _, rec := range best {
		out.Records = append(out.Records, rec)
	}
	Sort(out.Records)
	return out
}
