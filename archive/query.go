package archive

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// Query selects versions by host, URL prefix, domain, SURT prefix,
// capture time and Filter (select.go). The zero Query selects everything.
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
	// Domain selects the URLs of this host and its subdomains (InDomain).
	Domain string `json:"domain,omitempty"`
	// SURT selects the URLs whose SURT form (Surt) starts with it, e.g.
	// "com,example)/docs" or "com,example," (the subdomains).
	SURT string `json:"surt,omitempty"`
	// All says that the query selects the whole archive on purpose: a
	// request that names no URL, host, prefix, domain or SURT must set it
	// (cdx.FromStore). The store's scans ignore it.
	All bool `json:"all,omitempty"`
	// Filter narrows the selection by URL and version; with Latest, Scan
	// and Export keep each URL's newest version only.
	Filter
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
	m, err := q.Selector()
	if err != nil {
		return fmt.Errorf("archive urls: %w", err)
	}
	return s.urls(ctx, m, fn)
}

// URLsAfter calls fn for every URL of the store in URLs' order (host,
// then URL) that comes after the URL after ("": from the first), so
// that a walk can be cut into pieces that each start where the last one
// stopped (after need not be in the store still). fn's error stops the
// walk and is returned.
func (s *Store) URLsAfter(ctx context.Context, after string, fn func(url string) error) error {
	r := util.BytesPrefix([]byte{pHost})
	if after != "" {
		r.Start = append(hostKey(hostOf(after), after), 0) // the first key past after's
	}
	return s.walkHosts(ctx, r, func(_, u []byte) ([]byte, error) { return nil, fn(string(u)) })
}

// walkHosts calls fn with the host and URL of each host-index key in r,
// checking ctx every 256 keys; fn returns an error to stop, or a key to
// seek to (nil: the next key).
func (s *Store) walkHosts(ctx context.Context, r *util.Range, fn func(host, u []byte) ([]byte, error)) error {
	it := s.db.NewIterator(r, nil)
	defer it.Release()
	for n, ok := 0, it.Next(); ok; n++ {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("archive urls: %w", err)
			}
		}
		host, u, valid := splitHostOrdered(it.Key())
		if !valid {
			return fmt.Errorf("archive urls: %w: %w", ErrCorrupt, errBadValue)
		}
		seek, err := fn(host, u)
		if err != nil {
			return err
		}
		if seek != nil {
			ok = it.Seek(seek)
		} else {
			ok = it.Next()
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("archive urls: %w", err)
	}
	return nil
}

// urls is URLs with the query compiled. Hosts outside the domain or SURT
// scope are skipped by a seek past their keys, so such a scan costs the
// index's hosts plus the URLs of the hosts in scope.
func (s *Store) urls(ctx context.Context, m *Selector, fn func(url string) error) error {
	q := m.q
	if q.URL != "" {
		if (q.Host != "" && !strings.EqualFold(q.Host, hostOf(q.URL))) || !strings.HasPrefix(q.URL, q.Prefix) || !m.URL(q.URL) {
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
	host, hostOK, seen := "", false, false
	return s.walkHosts(ctx, r, func(h, u []byte) ([]byte, error) {
		if !seen || string(h) != host {
			// the first key's host too: it may be "" (urn: URLs)
			host, hostOK, seen = string(h), m.hostMay(string(h)), true
		}
		if !hostOK {
			// past every key of this host: its name, then a byte above 0
			return append(append([]byte{pHost}, host...), 1), nil
		}
		if u := string(u); m.URL(u) {
			return nil, fn(u)
		}
		return nil, nil
	})
}

// Scan calls fn for every version matching q, ordered by host, URL, then
// capture time. fn's error stops the walk and is returned.
func (s *Store) Scan(ctx context.Context, q Query, fn func(Version) error) error {
	m, err := q.Selector()
	if err != nil {
		return fmt.Errorf("archive scan: %w", err)
	}
	return s.urls(ctx, m, func(u string) error {
		return s.scanURL(ctx, u, m, fn)
	})
}

// scanURL calls fn for the versions of u the query keeps; with Latest,
// for the newest of them only.
func (s *Store) scanURL(ctx context.Context, u string, m *Selector, fn func(Version) error) error {
	q := m.q
	k := id.OfString(u)
	r := util.BytesPrefix(versionPrefix(k))
	if !q.From.IsZero() && q.From.After(minTime) && q.From.Before(maxTime) {
		r.Start = encTime(versionPrefix(k), q.From)
	}
	it := s.db.NewIterator(r, nil)
	defer it.Release()
	var newest *Version
	for it.Next() {
		v, err := s.decodeVersion(it.Key(), it.Value())
		if err != nil {
			return fmt.Errorf("archive scan: %w", err)
		}
		if !q.To.IsZero() && v.Time.After(q.To) {
			break
		}
		if !m.Version(v) {
			continue
		}
		if q.Latest {
			newest = &v
			continue
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("archive scan: %w", err)
	}
	if newest != nil {
		if err := fn(*newest); err != nil {
			return err
		}
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
