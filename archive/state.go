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

// StateFromVersion returns a crawl state for url derived from its newest
// stored version: the ETag and Last-Modified validators of its headers,
// its HTTP status and payload digest, and Checked at its capture time. It
// lets a node that holds a URL's versions as a replica, and becomes its
// owner, send a conditional GET on its first visit. Outlinks stay empty:
// the first changed version forwards all of its links. It returns an
// error wrapping ErrNotFound when url has no version, and ErrCorrupt when
// the version's file does not verify.
func (s *Store) StateFromVersion(ctx context.Context, url string) (CrawlState, error) {
	if err := ctx.Err(); err != nil {
		return CrawlState{}, fmt.Errorf("archive state from version: %w", err)
	}
	v, err := s.newest(id.OfString(url))
	if err != nil {
		return CrawlState{}, fmt.Errorf("archive state from version %s: %w", url, err)
	}
	c, err := s.Read(ctx, v)
	if err != nil {
		return CrawlState{}, fmt.Errorf("archive state from version %s: %w", url, err)
	}
	return CrawlState{
		ETag:         c.Header.Get("ETag"),
		LastModified: c.Header.Get("Last-Modified"),
		Status:       v.Status,
		Digest:       v.Digest,
		Checked:      v.Time,
	}, nil
}

// HasVersion reports whether url has a stored version.
func (s *Store) HasVersion(url string) (bool, error) {
	ok, err := s.hasVersion(id.OfString(url))
	if err != nil {
		return false, fmt.Errorf("archive has version: %w", err)
	}
	return ok, nil
}
