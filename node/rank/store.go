package rank

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Store keeps the ranks runs finished with, in goleveldb: per crawl day,
// the rank of each URL this node held in the run.
type Store struct {
	db *leveldb.DB
}

// Key prefixes.
const (
	pRank = 'r' // r day(8) url → float64 bits
	pDay  = 'd' // d day(8) → RunInfo
)

// RunInfo describes the run whose ranks a day holds.
type RunInfo struct {
	Run      string    `json:"run"`
	Day      int64     `json:"day"`
	Vertices int       `json:"vertices"` // held by this node
	Done     time.Time `json:"done"`
}

// OpenStore opens or creates a Store in dir.
func OpenStore(dir string) (*Store, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{DisableSeeksCompaction: true})
	if err != nil {
		return nil, fmt.Errorf("rank store: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func dayPrefix(p byte, day int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{p}, uint64(day))
}

// Put replaces the ranks of day with ranks, from run.
func (s *Store) Put(ctx context.Context, day int64, run string, ranks map[string]float64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rank store: %w", err)
	}
	b := new(leveldb.Batch)
	it := s.db.NewIterator(util.BytesPrefix(dayPrefix(pRank, day)), nil)
	for it.Next() {
		b.Delete(append([]byte(nil), it.Key()...))
	}
	it.Release()
	if err := it.Error(); err != nil {
		return fmt.Errorf("rank store: %w", err)
	}
	for u, v := range ranks {
		b.Put(append(dayPrefix(pRank, day), u...), binary.BigEndian.AppendUint64(nil, math.Float64bits(v)))
	}
	info, _ := json.Marshal(RunInfo{Run: run, Day: day, Vertices: len(ranks), Done: time.Now().UTC()})
	b.Put(dayPrefix(pDay, day), info)
	if err := s.db.Write(b, nil); err != nil {
		return fmt.Errorf("rank store: %w", err)
	}
	return nil
}

// ErrNoRank reports that no run ranked the URL on or before the day.
var ErrNoRank = errors.New("rank: no rank")

// Rank returns the rank of url from the newest day not after day that
// has a run, and that day. A URL the run did not hold here has none.
func (s *Store) Rank(url string, day int64) (float64, RunInfo, error) {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pDay}), nil)
	defer it.Release()
	ok := it.Seek(dayPrefix(pDay, day+1))
	if ok {
		ok = it.Prev()
	} else {
		ok = it.Last()
	}
	if !ok {
		return 0, RunInfo{}, ErrNoRank
	}
	var info RunInfo
	if err := json.Unmarshal(it.Value(), &info); err != nil {
		return 0, RunInfo{}, fmt.Errorf("rank store: %w", err)
	}
	v, err := s.db.Get(append(dayPrefix(pRank, info.Day), url...), nil)
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
		return 0, info, ErrNoRank
	case err != nil:
		return 0, info, fmt.Errorf("rank store: %w", err)
	case len(v) != 8:
		return 0, info, fmt.Errorf("rank store: %d bytes", len(v))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(v)), info, nil
}

// Runs returns the runs stored, oldest day first.
func (s *Store) Runs() ([]RunInfo, error) {
	it := s.db.NewIterator(util.BytesPrefix([]byte{pDay}), nil)
	defer it.Release()
	var out []RunInfo
	for it.Next() {
		var info RunInfo
		if err := json.Unmarshal(it.Value(), &info); err != nil {
			return nil, fmt.Errorf("rank store: %w", err)
		}
		out = append(out, info)
	}
	return out, it.Error()
}
