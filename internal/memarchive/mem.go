package memarchive

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
)

// Mem is an in-memory archive: the captures it was given, by canonical URL,
// answered as gateway.Archive and gateway.Lister require. It is safe for
// concurrent use.
type Mem struct {
	mu   sync.Mutex
	caps map[string][]*archive.Capture // by canonical URL, oldest first
}

// New returns an empty Mem.
func New() *Mem { return &Mem{caps: map[string][]*archive.Capture{}} }

// Add stores a copy of c under the canonical form of c.URL. A capture with
// the same URL and time replaces the earlier one. It fails, storing
// nothing, if c.URL has no canonical form.
func (m *Mem) Add(_ context.Context, c *archive.Capture) error {
	u, err := archive.CanonicalURL(c.URL)
	if err != nil {
		return fmt.Errorf("memarchive add: %w", err)
	}
	cp := *c
	cp.URL = u
	cp.Header = c.Header.Clone()
	cp.Body = append([]byte(nil), c.Body...)
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.caps[u]
	for i, old := range cs {
		if old.Time.Equal(cp.Time) {
			cs[i] = &cp
			return nil
		}
	}
	cs = append(cs, &cp)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Time.Before(cs[j].Time) })
	m.caps[u] = cs
	return nil
}

// VersionOf describes c as Mem lists it, and as the index would (c.URL is
// taken as it is: Mem stores captures under canonical URLs). Mem keeps no
// WARC records: a version's "record" is its payload, Size bytes at offset
// 0 of a file named after its key, digest and day.
func VersionOf(c *archive.Capture) archive.Version {
	key := id.OfString(c.URL)
	digest := id.Sum(c.Body)
	return archive.Version{
		URL:         c.URL,
		Key:         key,
		Digest:      digest,
		Day:         c.Time.Unix() / 86400,
		Time:        c.Time,
		Status:      c.Status,
		ContentType: c.Header.Get("Content-Type"),
		Length:      int64(len(c.Body)),
		Peer:        c.Peer,
		Browser:     c.Browser,
		Imported:    c.Imported,
		File:        fmt.Sprintf("objects/%x/%x/%s%s%d", key[0], key[1], key, digest, c.Time.Unix()/86400),
		Size:        int64(len(c.Body)),
	}
}

// Versions returns the versions of url (a canonical URL), oldest first; an
// empty slice if there are none (gateway.Archive).
func (m *Mem) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := []archive.Version{}
	for _, c := range m.caps[url] {
		vs = append(vs, VersionOf(c))
	}
	return vs, nil
}

// Get returns the newest version of url not after t, else the oldest, with
// a copy of its capture; an error wrapping archive.ErrNotFound if url has
// none (gateway.Archive).
func (m *Mem) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	if err := ctx.Err(); err != nil {
		return archive.Version{}, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.caps[url]
	if len(cs) == 0 {
		return archive.Version{}, nil, fmt.Errorf("memarchive get %s: %w", url, archive.ErrNotFound)
	}
	best := cs[0]
	for _, c := range cs {
		if !c.Time.After(t) {
			best = c
		}
	}
	cp := *best
	cp.Header = best.Header.Clone()
	cp.Body = append([]byte(nil), best.Body...)
	return VersionOf(best), &cp, nil
}

// List returns the versions q selects (cdx.Query.Contains), ordered by URL
// and then by time, at most q.Limit of them when q.Limit > 0
// (gateway.Lister).
func (m *Mem) List(ctx context.Context, q cdx.Query) ([]archive.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	urls := make([]string, 0, len(m.caps))
	for u := range m.caps {
		if q.Match != cdx.MatchPrefix || strings.HasPrefix(u, q.URL) {
			urls = append(urls, u)
		}
	}
	sort.Strings(urls)
	var out []archive.Version
	for _, u := range urls {
		for _, c := range m.caps[u] {
			if v := VersionOf(c); q.Contains(v) {
				out = append(out, v)
			}
		}
		if q.Limit > 0 && len(out) >= q.Limit {
			return out[:q.Limit], nil
		}
	}
	return out, nil
}
