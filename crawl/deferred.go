package crawl

import (
	"errors"
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// The per-host cap on new URLs (Config.HostNewURLs) defers rather than
// drops: a URL never known before that arrives when its host has had its
// cap of new URLs today goes to the deferred set ("d/" + url), at most
// maxDeferredFactor caps of them per host; newDay moves deferred URLs
// that this node owns into the known set and the queue, up to the new
// day's cap of each host, before any link of that day arrives. So a large
// site is discovered at the cap's pace and loses nothing, and a trap host
// adds at most the cap to the daily recrawl per day and holds at most
// maxDeferredFactor caps of waiting URLs on disk; URLs past that are
// dropped (they come back with a link found on a later day).

// maxDeferredFactor bounds a host's deferred URLs to this many caps.
const maxDeferredFactor = 10

// deferLocked returns the write that defers u (reached through redirects
// redirects), or none when u is deferred already or its host's backlog is
// full. The caller holds q.mu and commits the write with its batch; the
// count may run ahead of a write that then fails, which only makes the
// backlog's bound tighter until the next open.
func (q *queue) deferLocked(u string, redirects int) ([2][]byte, error) {
	host := hostOf(u)
	if q.deferred[host] >= maxDeferredFactor*q.newCap {
		return [2][]byte{}, nil
	}
	dk := []byte(prefixDeferred + u)
	switch _, err := q.db.Get(dk, nil); {
	case err == nil:
		return [2][]byte{}, nil
	case !errors.Is(err, leveldb.ErrNotFound):
		return [2][]byte{}, fmt.Errorf("crawl queue defer: %w", err)
	}
	if q.deferred == nil {
		q.deferred = make(map[string]int)
	}
	q.deferred[host]++
	return [2][]byte{dk, deferredValue(redirects)}, nil
}

func deferredValue(redirects int) []byte {
	if redirects <= 0 {
		return []byte{}
	}
	return []byte{byte(min(redirects, maxRedirectDepth))}
}

func parseDeferredValue(v []byte) int {
	if len(v) == 1 {
		return int(v[0])
	}
	return 0
}

// countDeferred counts the deferred URLs of each host.
func (q *queue) countDeferred() (map[string]int, error) {
	it := q.db.NewIterator(util.BytesPrefix([]byte(prefixDeferred)), nil)
	defer it.Release()
	out := make(map[string]int)
	for it.Next() {
		out[hostOf(string(it.Key()[len(prefixDeferred):]))]++
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("crawl queue scan deferred: %w", err)
	}
	return out, nil
}

// promoteDeferred is newDay's step for the deferred set: each deferred URL
// that owns admits (nil: all) and whose host is under newCap in newCounts
// is made known on day and queued at sequence *seq on (through put, which
// writes in chunks; del set means delete that key); a deferred URL owns
// refuses is dropped (its range moved away: a link brings it to its new
// owner). It returns the hosts queued to, their counts and the URLs made
// known. The caller holds q.mu.
func (q *queue) promoteDeferred(day int64, owns func(string) bool, newCounts map[string]int, seq *uint64, put func(k, v, del []byte) error) (map[string]int, int64, error) {
	hosts := make(map[string]int)
	var n int64
	it := q.db.NewIterator(util.BytesPrefix([]byte(prefixDeferred)), nil)
	defer it.Release()
	for it.Next() {
		u := string(it.Key()[len(prefixDeferred):])
		h := hostOf(u)
		dk := append([]byte(nil), it.Key()...)
		if owns != nil && !owns(u) {
			if err := put(nil, nil, dk); err != nil {
				return nil, 0, err
			}
			q.deferred[h]--
			continue
		}
		if q.newCap > 0 && newCounts[h] >= q.newCap {
			continue
		}
		redirects := parseDeferredValue(it.Value())
		uk := []byte(prefixURL + u)
		switch _, err := q.db.Get(uk, nil); {
		case err == nil:
			// Known since (a restart lost the day's count): already queued.
		case !errors.Is(err, leveldb.ErrNotFound):
			return nil, 0, fmt.Errorf("crawl queue promote deferred: %w", err)
		default:
			newCounts[h]++
			hosts[h]++
			n++
			if err := put(uk, knownValue(day, redirects), nil); err != nil {
				return nil, 0, err
			}
			if err := put(queueKey(day, h, *seq), entryValue(u, redirects), nil); err != nil {
				return nil, 0, err
			}
			*seq++
		}
		if err := put(nil, nil, dk); err != nil {
			return nil, 0, err
		}
		q.deferred[h]--
	}
	if err := it.Error(); err != nil {
		return nil, 0, fmt.Errorf("crawl queue promote deferred: %w", err)
	}
	for h, c := range q.deferred {
		if c <= 0 {
			delete(q.deferred, h)
		}
	}
	return hosts, n, nil
}
