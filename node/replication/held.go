package replication

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/atomicfile"
	"github.com/herod-archive/herod/internal/id"
)

// The hold: a record another member hands off (OpHandOff) is signed by
// its fetcher, which proves who made it, not that the site served it.
// So the owner does not import it: it keeps it in a held area on disk,
// shown by nothing, witnessed by nobody, pushed nowhere, and has its own
// crawler fetch the URL. Once that fetch stores or confirms (a 304, an
// unchanged payload) the held record's payload — same status, same
// digest — the record is released: imported as any replica's copy and
// pushed to the range's replicas (Replicator.Confirm). A record no own
// fetch confirms within HoldLimits.For is dropped (ExpireHeld).

// Hold defaults (HoldLimits' zero values).
const (
	DefaultHoldFor            = 7 * 24 * time.Hour
	DefaultHoldPerSender      = 1024
	DefaultHoldTotal          = 16384
	DefaultHoldPerSenderBytes = 64 << 20
	DefaultHoldTotalBytes     = 512 << 20
)

// ErrHoldFull is wrapped by the refusal of a handed-off record that would
// take its sender's or the node's held area past its bound.
var ErrHoldFull = errors.New("replication: hand-off hold full")

// HoldLimits bound a node's held area; a zero field takes its default.
type HoldLimits struct {
	For            time.Duration // how long a record waits for confirmation (DefaultHoldFor)
	PerSender      int           // records held for one sender (DefaultHoldPerSender)
	Total          int           // records held in all (DefaultHoldTotal)
	PerSenderBytes int64         // bytes held for one sender (DefaultHoldPerSenderBytes)
	TotalBytes     int64         // bytes held in all (DefaultHoldTotalBytes)
}

func (l HoldLimits) withDefaults() HoldLimits {
	if l.For <= 0 {
		l.For = DefaultHoldFor
	}
	if l.PerSender <= 0 {
		l.PerSender = DefaultHoldPerSender
	}
	if l.Total <= 0 {
		l.Total = DefaultHoldTotal
	}
	if l.PerSenderBytes <= 0 {
		l.PerSenderBytes = DefaultHoldPerSenderBytes
	}
	if l.TotalBytes <= 0 {
		l.TotalBytes = DefaultHoldTotalBytes
	}
	return l
}

// heldRecord describes one held record: the first line of its file.
type heldRecord struct {
	Entry   archive.Entry `json:"entry"`
	URL     string        `json:"url"`
	Status  int           `json:"status"`
	Fetcher string        `json:"fetcher"`
	Sender  string        `json:"sender"`
	At      time.Time     `json:"at"` // when this node accepted it
	Size    int64         `json:"size"`
	// Round marks a record a round held (guard.go), not a hand-off:
	// rounds do not read it again.
	Round bool `json:"round,omitempty"`
}

// Held is a node's held area: one file per record, <entry name>.held in
// its directory, holding a line of JSON (heldRecord) and the record as
// its sender stored it. A file is written to a temporary name, synced and
// renamed, so a crash keeps a record whole or not at all. Safe for
// concurrent use.
type Held struct {
	dir string
	lim HoldLimits
	log *slog.Logger

	mu        sync.Mutex
	recs      map[archive.Entry]heldRecord
	releasing map[archive.Entry]bool // claimed by a Confirm under way
	keys      map[id.ID]int          // records per URL key
	count     map[string]int         // records per sender
	size      map[string]int64       // bytes per sender
	bytes     int64
}

// maxHeldMeta bounds the first line of a held file.
const maxHeldMeta = 64 << 10

// OpenHeld opens (creating it) the held area in dir and reads the
// records it keeps; a file that does not parse is removed and logged.
func OpenHeld(dir string, lim HoldLimits, log *slog.Logger) (*Held, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("replication hold: %w", err)
	}
	h := &Held{dir: dir, lim: lim.withDefaults(), log: log, recs: map[archive.Entry]heldRecord{},
		releasing: map[archive.Entry]bool{}, keys: map[id.ID]int{}, count: map[string]int{}, size: map[string]int64{}}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("replication hold: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		path := filepath.Join(dir, name)
		if !strings.HasSuffix(name, ".held") {
			if strings.HasPrefix(name, ".tmp-") || strings.HasSuffix(name, ".tmp") {
				_ = os.Remove(path) // a write a crash interrupted (atomicfile's, or one before it)
			}
			continue
		}
		rec, err := readHeldMeta(path)
		if err == nil && rec.Entry.Name()+".held" != name {
			err = errors.New("its entry does not match its name")
		}
		if err != nil {
			log.Warn("replication hold: dropping an unreadable held record", "file", name, "err", err)
			_ = os.Remove(path)
			continue
		}
		h.insertLocked(rec)
	}
	return h, nil
}

// readHeldMeta reads the first line of a held file.
func readHeldMeta(path string) (heldRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return heldRecord{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, maxHeldMeta)).ReadBytes('\n')
	if err != nil {
		return heldRecord{}, fmt.Errorf("header: %w", err)
	}
	var rec heldRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return heldRecord{}, fmt.Errorf("header: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return heldRecord{}, err
	}
	if fi.Size() != int64(len(line))+rec.Size {
		return heldRecord{}, fmt.Errorf("%d bytes, want %d", fi.Size(), int64(len(line))+rec.Size)
	}
	return rec, nil
}

func (h *Held) path(e archive.Entry) string { return filepath.Join(h.dir, e.Name()+".held") }

func (h *Held) insertLocked(rec heldRecord) {
	h.recs[rec.Entry] = rec
	h.keys[rec.Entry.Key]++
	h.count[rec.Sender]++
	h.size[rec.Sender] += rec.Size
	h.bytes += rec.Size
}

func (h *Held) deleteLocked(e archive.Entry) {
	rec, ok := h.recs[e]
	if !ok {
		return
	}
	delete(h.recs, e)
	delete(h.releasing, e)
	if h.keys[e.Key]--; h.keys[e.Key] <= 0 {
		delete(h.keys, e.Key)
	}
	if h.count[rec.Sender]--; h.count[rec.Sender] <= 0 {
		delete(h.count, rec.Sender)
		delete(h.size, rec.Sender)
	} else {
		h.size[rec.Sender] -= rec.Size
	}
	h.bytes -= rec.Size
}

// Has reports whether e is held.
func (h *Held) Has(e archive.Entry) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.recs[e]
	return ok
}

// heldByRound reports whether e is held by a round's guard (guard.go).
func (h *Held) heldByRound(e archive.Entry) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recs[e].Round
}

// stored drops e, which the store now holds (a round imported it), if
// it is held and no claim of it is under way.
func (h *Held) stored(e archive.Entry) {
	h.mu.Lock()
	_, ok := h.recs[e]
	if !ok || h.releasing[e] {
		h.mu.Unlock()
		return
	}
	h.releasing[e] = true
	h.mu.Unlock()
	h.done(e, true)
}

// HasKey reports whether a record of the URL whose key is key is held.
func (h *Held) HasKey(key id.ID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keys[key] > 0
}

// Len returns the records held and their bytes.
func (h *Held) Len() (n int, bytes int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.recs), h.bytes
}

// URLs returns the URLs of the held records, once each.
func (h *Held) URLs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, rec := range h.recs {
		if !seen[rec.URL] {
			seen[rec.URL] = true
			out = append(out, rec.URL)
		}
	}
	return out
}

// add holds data, the record rec describes, durably before it returns;
// added is false when it was held already. It refuses (ErrHoldFull) a
// record past its sender's or the area's bounds.
func (h *Held) add(rec heldRecord, data []byte) (added bool, err error) {
	rec.Size = int64(len(data))
	h.mu.Lock()
	if _, ok := h.recs[rec.Entry]; ok {
		h.mu.Unlock()
		return false, nil
	}
	switch {
	case h.count[rec.Sender]+1 > h.lim.PerSender || h.size[rec.Sender]+rec.Size > h.lim.PerSenderBytes:
		err = fmt.Errorf("%w: %d records, %d bytes held for sender %s (at most %d, %d bytes)",
			ErrHoldFull, h.count[rec.Sender], h.size[rec.Sender], rec.Sender, h.lim.PerSender, h.lim.PerSenderBytes)
	case len(h.recs)+1 > h.lim.Total || h.bytes+rec.Size > h.lim.TotalBytes:
		err = fmt.Errorf("%w: %d records, %d bytes held (at most %d, %d bytes)",
			ErrHoldFull, len(h.recs), h.bytes, h.lim.Total, h.lim.TotalBytes)
	}
	if err != nil {
		h.mu.Unlock()
		return false, err
	}
	h.insertLocked(rec) // reserves the room while the file is written
	h.releasing[rec.Entry] = true
	h.mu.Unlock()
	if err := h.write(rec, data); err != nil {
		h.mu.Lock()
		h.deleteLocked(rec.Entry)
		h.mu.Unlock()
		return false, fmt.Errorf("replication hold: %w", err)
	}
	h.mu.Lock()
	delete(h.releasing, rec.Entry)
	h.mu.Unlock()
	return true, nil
}

// write writes rec's file whole or not at all (atomicfile.Write).
func (h *Held) write(rec heldRecord, data []byte) error {
	meta, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(h.path(rec.Entry), append(append(meta, '\n'), data...), 0o644)
}

// read returns the record e's file holds.
func (h *Held) read(e archive.Entry) ([]byte, error) {
	raw, err := os.ReadFile(h.path(e))
	if err != nil {
		return nil, fmt.Errorf("replication hold: %w", err)
	}
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		return nil, fmt.Errorf("replication hold: %s: no header", e.Name())
	}
	return raw[i+1:], nil
}

// claim returns the held records of key whose payload has status and
// digest, and marks them being released: no other claim returns them
// until done.
func (h *Held) claim(key id.ID, status int, digest id.ID) []heldRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.keys[key] == 0 {
		return nil // the common case: a map look-up per fetch
	}
	var out []heldRecord
	for e, rec := range h.recs {
		if e.Key == key && e.Digest == digest && rec.Status == status && !h.releasing[e] {
			h.releasing[e] = true
			out = append(out, rec)
		}
	}
	return out
}

// done ends a claim of e: with drop, its file is removed and it is held
// no more; otherwise it stays held.
func (h *Held) done(e archive.Entry, drop bool) {
	if drop {
		if err := os.Remove(h.path(e)); err != nil && !errors.Is(err, os.ErrNotExist) {
			h.log.Warn("replication hold: cannot remove a held record", "entry", e.Name(), "err", err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if drop {
		h.deleteLocked(e)
	} else {
		delete(h.releasing, e)
	}
}

// expired claims the records accepted more than For before now.
func (h *Held) expired(now time.Time) []heldRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []heldRecord
	for e, rec := range h.recs {
		if now.Sub(rec.At) > h.lim.For && !h.releasing[e] {
			h.releasing[e] = true
			out = append(out, rec)
		}
	}
	return out
}
