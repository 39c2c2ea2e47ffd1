package archive

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Query selects versions by host, URL prefix and capture time. The zero
// Query selects everything.
type Query struct {
	// URL selects exactly this URL; if set, Host and Prefix must match it
	// or be empty.
	URL string `json:"url,omitempty"`
	// Host selects URLs whose host (with any non-default port, as in the
	// canonical URL) equals it, case-insensitively. Empty: any host.
	Host string `json:"host,omitempty"`
	// Prefix selects URLs that start with it, e.g. "http://a.example/docs/".
	// It must include scheme and host; if Host is set too, both apply.
	Prefix string `json:"prefix,omitempty"`
	// From and To bound the capture time, both inclusive; zero means
	// unbounded.
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
}

// contains reports whether t lies in the query's time bounds.
func (q Query) contains(t time.Time) bool {
	return (q.From.IsZero() || !t.Before(q.From)) && (q.To.IsZero() || !t.After(q.To))
}

// hostRange returns the host-index key range that holds the URLs the
// query can match.
func (q Query) hostRange() (*util.Range, error) {
	host := strings.ToLower(q.Host)
	if q.Prefix != "" {
		ph := hostOf(q.Prefix)
		if ph == "" || !strings.Contains(q.Prefix, "://") {
			return nil, fmt.Errorf("prefix %q has no scheme and host", q.Prefix)
		}
		if host != "" && host != ph {
			return &util.Range{Start: []byte{pHost}, Limit: []byte{pHost}}, nil // empty
		}
		return util.BytesPrefix(hostKey(ph, q.Prefix)), nil
	}
	if host != "" {
		return util.BytesPrefix(hostKey(host, "")), nil
	}
	return util.BytesPrefix([]byte{pHost}), nil
}

// URLs calls fn for every URL matching the host and prefix of q (times are
// ignored), ordered by host then URL. fn's error stops the walk and is
// returned.
func (s *Store) URLs(ctx context.Context, q Query, fn func(url string) error) error {
	if q.URL != "" {
		if (q.Host != "" && !strings.EqualFold(q.Host, hostOf(q.URL))) || !strings.HasPrefix(q.URL, q.Prefix) {
			return nil
		}
		has, err := s.db.Has(hostKey(hostOf(q.URL), q.URL), nil)
		if err != nil {
			return fmt.Errorf("archive urls: %w", err)
		}
		if !has {
			return nil
		}
		return fn(q.URL)
	}
	r, err := q.hostRange()
	if err != nil {
		return fmt.Errorf("archive urls: %w", err)
	}
	it := s.db.NewIterator(r, nil)
	defer it.Release()
	for n := 0; it.Next(); n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("archive urls: %w", err)
			}
		}
		k := it.Key()
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return fmt.Errorf("archive urls: %w: %w", ErrCorrupt, errBadValue)
		}
		if err := fn(string(k[i+1:])); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("archive urls: %w", err)
	}
	return nil
}

// Scan calls fn for every version matching q, ordered by host, URL, then
// capture time. fn's error stops the walk and is returned.
func (s *Store) Scan(ctx context.Context, q Query, fn func(Version) error) error {
	return s.URLs(ctx, q, func(u string) error {
		return s.scanURL(ctx, u, q, fn)
	})
}

// scanURL calls fn for the versions of u inside q's time bounds.
func (s *Store) scanURL(ctx context.Context, u string, q Query, fn func(Version) error) error {
	k := id.OfString(u)
	r := util.BytesPrefix(versionPrefix(k))
	if !q.From.IsZero() && q.From.After(minTime) && q.From.Before(maxTime) {
		r.Start = encTime(versionPrefix(k), q.From)
	}
	it := s.db.NewIterator(r, nil)
	defer it.Release()
	for it.Next() {
		v, err := s.decodeVersion(it.Key(), it.Value())
		if err != nil {
			return fmt.Errorf("archive scan: %w", err)
		}
		if !q.To.IsZero() && v.Time.After(q.To) {
			break
		}
		if !q.contains(v.Time) {
			continue
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("archive scan: %w", err)
	}
	return ctx.Err()
}

// Checks returns the times at which url was found unchanged (Put of an
// identical payload, or Touch), one per crawl day, oldest first.
func (s *Store) Checks(ctx context.Context, url string) ([]time.Time, error) {
	cs, err := s.CheckKinds(ctx, url)
	out := make([]time.Time, len(cs))
	for i, c := range cs {
		out[i] = c.Time
	}
	return out, err
}

// Check is a day a URL was found unchanged: NotModified when the server
// answered a conditional GET with 304 (Touch), not when it sent the same
// payload again (Put).
type Check struct {
	Time        time.Time
	NotModified bool
}

// CheckKinds is Checks with how each check was answered.
func (s *Store) CheckKinds(ctx context.Context, url string) ([]Check, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("archive checks: %w", err)
	}
	k := id.OfString(url)
	it := s.db.NewIterator(util.BytesPrefix(append([]byte{pTouch}, k[:]...)), nil)
	defer it.Release()
	var out []Check
	for it.Next() {
		v := it.Value()
		if len(v) != 8 && len(v) != 9 {
			return nil, fmt.Errorf("archive checks: %w: %w", ErrCorrupt, errBadValue)
		}
		out = append(out, Check{Time: decTime(v), NotModified: len(v) == 9 && v[8] == 1})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("archive checks: %w", err)
	}
	return out, nil
}
