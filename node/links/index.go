package links

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/archive"
)

// DefaultPerTarget is Config.PerTarget when zero.
const DefaultPerTarget = 1000

// Key prefixes of the index's database.
const (
	pLink  = 'l' // l target 0 source 0 from(8) → stored
	pCount = 'n' // n target → uint32 records kept
	pMore  = 'x' // x target → uint32 records refused over the cap
	pState = 'o' // o source → the Indexer's sourceState (indexer.go)
	pRead  = 'r' // r key(20) → the last version read of the source of that archive key (marks.go)
)

// stored is the value of a link key.
type stored struct {
	Anchor string    `json:"a,omitempty"`
	Until  time.Time `json:"until,omitzero"`
	Seen   time.Time `json:"seen"`
}

// Config configures an Index.
type Config struct {
	// PerTarget bounds the records kept for one target; those beyond are
	// counted (Result.More). Zero means DefaultPerTarget.
	PerTarget int
	// Now is the clock Put refuses future records by; nil means
	// time.Now.
	Now func() time.Time
}

// Index is the target side of the link index, in goleveldb: the records
// of the links that point to the URLs this node holds.
type Index struct {
	db  *leveldb.DB
	cfg Config
	mu  sync.Mutex // serializes Put's read-modify-write of counts
}

// Open opens or creates the index in dir.
func Open(dir string, cfg Config) (*Index, error) {
	if cfg.PerTarget <= 0 {
		cfg.PerTarget = DefaultPerTarget
	}
	db, err := leveldb.OpenFile(dir, nil)
	if err != nil {
		return nil, fmt.Errorf("links open: %w", err)
	}
	return &Index{db: db, cfg: cfg}, nil
}

// Close closes the database.
func (x *Index) Close() error { return x.db.Close() }

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

// Put stores recs, each checked (Record.Check, and Seen not after the
// index's clock by more than archive.MaxClockSkew, so that no copy can
// outrank every later one): a record already held
// is replaced by a copy with a later or equal Seen; a new record is kept
// while its target has fewer than PerTarget, and counted otherwise. It
// returns how many records it took (stored or counted); a bad record is
// an error and stores nothing of the batch.
func (x *Index) Put(ctx context.Context, recs []Record) (int, error) {
	now := time.Now
	if x.cfg.Now != nil {
		now = x.cfg.Now
	}
	latest := now().Add(archive.MaxClockSkew)
	for _, r := range recs {
		if err := r.Check(); err != nil {
			return 0, err
		}
		if r.Seen.After(latest) {
			return 0, fmt.Errorf("%w: seen %s is in the future", errRecord, r.Seen.UTC().Format(time.RFC3339))
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("links put: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	b := new(leveldb.Batch)
	counts := map[string]uint32{}
	more := map[string]uint32{}
	count := func(m map[string]uint32, p byte, t string) (uint32, error) {
		if n, ok := m[t]; ok {
			return n, nil
		}
		n, err := x.getCount(countKey(p, t))
		m[t] = n
		return n, err
	}
	fresh := map[string]bool{}
	for _, r := range recs {
		k := linkKey(r)
		old, err := x.db.Get(k, nil)
		switch {
		case err == nil:
			var s stored
			if json.Unmarshal(old, &s) == nil && r.Seen.Before(s.Seen) {
				continue
			}
		case errors.Is(err, leveldb.ErrNotFound):
			if fresh[string(k)] {
				break
			}
			n, err := count(counts, pCount, r.Target)
			if err != nil {
				return 0, err
			}
			if int(n) >= x.cfg.PerTarget {
				m, err := count(more, pMore, r.Target)
				if err != nil {
					return 0, err
				}
				more[r.Target] = m + 1
				continue
			}
			counts[r.Target] = n + 1
			fresh[string(k)] = true
		default:
			return 0, fmt.Errorf("links put: %w", err)
		}
		v, _ := json.Marshal(stored{Anchor: r.Anchor, Until: r.Until, Seen: r.Seen})
		b.Put(k, v)
	}
	for t, n := range counts {
		b.Put(countKey(pCount, t), binary.BigEndian.AppendUint32(nil, n))
	}
	for t, n := range more {
		b.Put(countKey(pMore, t), binary.BigEndian.AppendUint32(nil, n))
	}
	if err := x.db.Write(b, nil); err != nil {
		return 0, fmt.Errorf("links put: %w", err)
	}
	return len(recs), nil
}

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
		var s stored
		if err := json.Unmarshal(it.Value(), &s); err != nil {
			return Result{}, fmt.Errorf("links: bad record: %w", err)
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
