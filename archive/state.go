package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/herod-archive/herod/internal/id"
)

// stateRecord is the stored form of a CrawlState; the URL is kept so that
// reindex and debugging tools can name the entry.
type stateRecord struct {
	URL   string     `json:"url"`
	State CrawlState `json:"state"`
}

// State returns the crawl state last set for url, or ErrNotFound.
func (s *Store) State(ctx context.Context, url string) (CrawlState, error) {
	if err := ctx.Err(); err != nil {
		return CrawlState{}, fmt.Errorf("archive state: %w", err)
	}
	val, err := s.db.Get(stateKey(id.OfString(url)), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return CrawlState{}, ErrNotFound
	}
	if err != nil {
		return CrawlState{}, fmt.Errorf("archive state: %w", err)
	}
	var rec stateRecord
	if err := json.Unmarshal(val, &rec); err != nil {
		return CrawlState{}, fmt.Errorf("archive state: %w: %v", ErrCorrupt, err)
	}
	return rec.State, nil
}

// SetState replaces the crawl state of url. Outlinks are stored sorted and
// without duplicates. The write is not synced: losing the last states in a
// power failure only makes the crawler refetch unconditionally.
func (s *Store) SetState(ctx context.Context, url string, st CrawlState) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("archive set state: %w", err)
	}
	val, err := encodeState(url, st)
	if err != nil {
		return fmt.Errorf("archive set state: %w", err)
	}
	if err := s.putState(id.OfString(url), val); err != nil {
		return fmt.Errorf("archive set state: %w", err)
	}
	return nil
}

// encodeState returns the stored form of url's crawl state st.
func encodeState(url string, st CrawlState) ([]byte, error) {
	if url == "" {
		return nil, errors.New("empty url")
	}
	if st.Outlinks != nil {
		st.Outlinks = slices.Clone(st.Outlinks)
		slices.Sort(st.Outlinks)
		st.Outlinks = slices.Compact(st.Outlinks)
	}
	if !st.Checked.IsZero() {
		st.Checked = st.Checked.UTC().Round(0)
	}
	return json.Marshal(stateRecord{URL: url, State: st})
}
