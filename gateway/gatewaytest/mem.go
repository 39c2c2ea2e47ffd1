package gatewaytest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
)

// Mem is an in-memory gateway.Archive and gateway.Lister: the reference
// implementation the suite is checked against, and a stand-in archive for
// tests of code that serves a gateway. It is safe for concurrent use.
type Mem struct {
	mu   sync.Mutex
	caps map[string][]*archive.Capture // by canonical URL, oldest first
}

var (
	_ gateway.Archive = (*Mem)(nil)
	_ gateway.Lister  = (*Mem)(nil)
)

// NewMem returns an empty Mem.
func NewMem() *Mem { return &Mem{caps: map[string][]*archive.Capture{}} }

// Add stores a copy of c under the canonical form of c.URL. A capture with
// the same URL and time replaces the earlier one.
func (m *Mem) Add(_ context.Context, c *archive.Capture) error {
	u, err := canon.Canonical(c.URL)
	if err != nil {
		return fmt.Errorf("gatewaytest add: %w", err)
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

// versionOf describes a capture as the index would.
func versionOf(c *archive.Capture) archive.Version {
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
		File:        fmt.Sprintf("objects/%x/%x/%s%s%d", key[0], key[1], key, digest, c.Time.Unix()/86400),
	}
}

// Versions implements gateway.Archive.
func (m *Mem) Versions(ctx context.Context, url string) ([]archive.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := []archive.Version{}
	for _, c := range m.caps[url] {
		vs = append(vs, versionOf(c))
	}
	return vs, nil
}

// Get implements gateway.Archive.
func (m *Mem) Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error) {
	if err := ctx.Err(); err != nil {
		return archive.Version{}, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.caps[url]
	if len(cs) == 0 {
		return archive.Version{}, nil, fmt.Errorf("gatewaytest get %s: %w", url, archive.ErrNotFound)
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
	return versionOf(best), &cp, nil
}

// List implements gateway.Lister.
func (m *Mem) List(ctx context.Context, q cdx.Query) ([]archive.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
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
			if v := versionOf(c); q.Contains(v) {
				out = append(out, v)
			}
		}
		if q.Limit > 0 && len(out) >= q.Limit {
			out = out[:q.Limit]
			break
		}
	}
	m.mu.Unlock()
	return out, nil
}
