package links

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/anchortext"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/webrefs"
)

// Archive is what an Indexer reads of the source pages: their versions,
// oldest first, and the capture of a version (the one at its Time).
// *archive.Store implements it.
type Archive interface {
	Versions(ctx context.Context, url string) ([]archive.Version, error)
	Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error)
}

// Send delivers records to their targets' holders; it returns only when
// they are stored (or refused for good) there.
type Send func(ctx context.Context, recs []Record) error

// openLink is a link the newest read version of a source carries.
type openLink struct {
	Anchor string    `json:"a,omitempty"`
	From   time.Time `json:"from"`
}

// sourceState is what an Indexer remembers of one source: the capture
// time of the last version it read and the links that version carries
// (stored in a binary form, or in JSON by older indexes: state.go).
type sourceState struct {
	Last time.Time           `json:"last"`
	Open map[string]openLink `json:"open,omitempty"`
}

// Indexer is the source side of the link index: it turns the versions
// of the pages this node owns into Records and sends them (Sync). Its
// state lives in the Index's database, so it survives restarts.
type Indexer struct {
	Index   *Index
	Archive Archive
	Send    Send
}

func stateKey(source string) []byte { return append([]byte{pState}, source...) }

func (ix *Indexer) state(source string) (sourceState, error) {
	var st sourceState
	v, err := ix.Index.db.Get(stateKey(source), nil)
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
		return st, nil
	case err != nil:
		return st, fmt.Errorf("links state: %w", err)
	}
	if st, err = decodeState(v); err != nil {
		return sourceState{}, fmt.Errorf("links state %s: %w", source, err)
	}
	return st, nil
}

// Sync reads the versions of source newer than the last one it read,
// sends the records they open and close, and then remembers the newest
// version. It returns how many records it sent. A failed send keeps the
// old state: the next Sync sends the same records again (the holders
// take a record twice as once).
func (ix *Indexer) Sync(ctx context.Context, source string) (int, error) {
	recs, next, err := ix.Diff(ctx, source)
	if err != nil || next == nil {
		return 0, err
	}
	if len(recs) > 0 {
		if err := ix.Send(ctx, recs); err != nil {
			return 0, fmt.Errorf("links sync %s: %w", source, err)
		}
	}
	if err := ix.save(source, next); err != nil {
		return 0, err
	}
	return len(recs), nil
}

// syncBatch is how many records SyncAll gathers, from as many sources,
// before it sends them: one walk of the ring serves them all.
const syncBatch = 20_000

// SyncAll is Sync for many sources, their records sent together in
// batches of about syncBatch. It returns the records sent, the sources
// that failed (their state is kept: they are read again by their next
// Sync) and the first error.
func (ix *Indexer) SyncAll(ctx context.Context, sources []string) (sent int, failed []string, err error) {
	type done struct {
		source string
		state  *sourceState
	}
	var recs []Record
	var pending []done
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if len(recs) > 0 {
			if e := ix.Send(ctx, recs); e != nil {
				for _, d := range pending {
					failed = append(failed, d.source)
				}
				if err == nil {
					err = fmt.Errorf("links sync: %w", e)
				}
				recs, pending = recs[:0], pending[:0]
				return
			}
		}
		for _, d := range pending {
			if e := ix.save(d.source, d.state); e != nil {
				failed = append(failed, d.source)
				if err == nil {
					err = e
				}
			}
		}
		sent += len(recs)
		recs, pending = recs[:0], pending[:0]
	}
	for i, src := range sources {
		if ctx.Err() != nil {
			failed = append(failed, sources[i:]...)
			break
		}
		rs, next, last, e := ix.diff(ctx, src)
		if e != nil {
			failed = append(failed, src)
			if err == nil {
				err = e
			}
			continue
		}
		if next == nil {
			// Nothing newer than the state: a store written before
			// read marks, or a source marked twice. Its mark lets the
			// next sweep of every source skip it.
			if !last.IsZero() {
				if e := ix.markRead(src, last); e != nil && err == nil {
					err = e
				}
			}
			continue
		}
		recs = append(recs, rs...)
		pending = append(pending, done{src, next})
		if len(recs) >= syncBatch {
			flush()
		}
	}
	flush()
	if err == nil {
		err = ctx.Err()
	}
	return sent, failed, err
}

// save stores the state of source after its records were delivered,
// and its read mark (marks.go) in the same write.
func (ix *Indexer) save(source string, st *sourceState) error {
	b := new(leveldb.Batch)
	b.Put(stateKey(source), encodeState(st))
	putRead(b, source, st.Last)
	if err := ix.Index.db.Write(b, nil); err != nil {
		return fmt.Errorf("links sync %s: %w", source, err)
	}
	return nil
}

// markRead writes the read mark of a source whose state is last.
func (ix *Indexer) markRead(source string, last time.Time) error {
	b := new(leveldb.Batch)
	putRead(b, source, last)
	if err := ix.Index.db.Write(b, nil); err != nil {
		return fmt.Errorf("links mark %s: %w", source, err)
	}
	return nil
}

// Forget drops what the Indexer remembers of source, so that the next
// Sync reads it from its first version again and sends every record
// (after a purge of its captures, or to rebuild the holders' copies).
func (ix *Indexer) Forget(source string) error {
	b := new(leveldb.Batch)
	b.Delete(stateKey(source))
	b.Delete(readKey(id.OfString(source)))
	return ix.Index.db.Write(b, nil)
}

// Diff returns the records the versions of source newer than the
// remembered one open and close, and the state after them (nil when
// there is no newer version).
func (ix *Indexer) Diff(ctx context.Context, source string) ([]Record, *sourceState, error) {
	recs, st, _, err := ix.diff(ctx, source)
	return recs, st, err
}

// diff is Diff that also returns the capture time of the last version
// read before (zero when the source has no state).
func (ix *Indexer) diff(ctx context.Context, source string) ([]Record, *sourceState, time.Time, error) {
	st, err := ix.state(source)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	last := st.Last
	vs, err := ix.Archive.Versions(ctx, source)
	if err != nil {
		return nil, nil, last, fmt.Errorf("links diff %s: %w", source, err)
	}
	var recs []Record
	changed := false
	for _, v := range vs {
		if !v.Time.After(st.Last) {
			continue
		}
		changed = true
		now, err := ix.linksOf(ctx, source, v)
		if err != nil {
			return nil, nil, last, err
		}
		if st.Open == nil {
			st.Open = map[string]openLink{}
		}
		for _, t := range slices.Sorted(mapKeys(st.Open)) {
			o := st.Open[t]
			a, still := now[t]
			switch {
			case !still:
				recs = append(recs, Record{Target: t, Source: source, Anchor: o.Anchor, From: o.From, Until: v.Time, Seen: v.Time})
				delete(st.Open, t)
			case a != o.Anchor && a != "":
				// The same link with a new text: the record keeps its
				// span and shows the newest text.
				o.Anchor = a
				st.Open[t] = o
				recs = append(recs, Record{Target: t, Source: source, Anchor: a, From: o.From, Seen: v.Time})
			}
		}
		for _, t := range slices.Sorted(mapKeys(now)) {
			if _, open := st.Open[t]; open {
				continue
			}
			st.Open[t] = openLink{Anchor: now[t], From: v.Time}
			recs = append(recs, Record{Target: t, Source: source, Anchor: now[t], From: v.Time, Seen: v.Time})
		}
		st.Last = v.Time
	}
	if !changed {
		return nil, nil, last, nil
	}
	return recs, &st, last, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// linksOf returns the links version v of source carries, with their
// anchor texts (Carried).
func (ix *Indexer) linksOf(ctx context.Context, source string, v archive.Version) (map[string]string, error) {
	if !mayCarry(v) {
		return nil, nil
	}
	_, c, err := ix.Archive.Get(ctx, source, v.Time)
	if err != nil {
		return nil, fmt.Errorf("links read %s: %w", source, err)
	}
	return Carried(source, v, c)
}

// mayCarry reports whether a version of v's status and type carries
// links: a successful HTML page.
func mayCarry(v archive.Version) bool {
	return v.Status >= 200 && v.Status <= 299 && isHTML(v.ContentType)
}

// Carried returns the links capture c (version v) of source carries,
// with their anchor texts: those of a successful HTML page (the links a
// reader follows, as the crawler extracts them; crawl.ExtractRequisites),
// none for any other version (an error page, a redirect, another type).
// It is the one extractor of the index: the Indexer builds records with
// it and the Verifier checks peers' records with it.
func Carried(source string, v archive.Version, c *archive.Capture) (map[string]string, error) {
	if !mayCarry(v) || c == nil {
		return nil, nil
	}
	base, err := url.Parse(source)
	if err != nil {
		return nil, fmt.Errorf("links read %s: %w", source, err)
	}
	ls, anchors := carried(base, v.ContentType, c.Body, webrefs.ReadsTokens(c.Body))
	if len(ls) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(ls))
	for _, l := range ls {
		out[l] = anchors[l]
	}
	return out, nil
}

// carried returns the links an HTML body fetched from base carries
// (crawl.ExtractRequisites') and the anchor texts of its links
// (Anchors), reading a body webrefs reads as tokens once (oneWalk: one
// Walker's tokens to a webrefs.TokenRefs and an anchortext.Collector),
// any other twice (the second walk, for the anchors, only when there are
// links).
func carried(base *url.URL, ctype string, body []byte, oneWalk bool) ([]string, map[string]string) {
	if !oneWalk {
		ls, _ := crawl.ExtractRequisites(base, ctype, body)
		if len(ls) == 0 {
			return nil, nil
		}
		return ls, Anchors(base, body)
	}
	w := webrefs.NewWalker(body)
	tr := webrefs.TokenRefs{Host: base.Host}
	ac := anchortext.NewCollector(base)
	for w.Next() {
		tr.Add(w) // before the collector's Text rewrites a text token's bytes
		ac.Take(w.Type(), w)
	}
	ls, _ := crawl.RequisitesOfRefs(base, tr.Refs, tr.Base, tr.HasBase)
	return ls, ac.Result()
}

func isHTML(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.Split(ctype, ";")[0]))
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}
