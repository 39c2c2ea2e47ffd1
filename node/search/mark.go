package search

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/atomicfile"
	"github.com/herod-archive/herod/internal/id"
)

// A node's start indexed again every version of every URL it owns (the
// backfill), so that nothing a crash or a full queue left out stayed out
// of the index: at a million URLs that is the CPU of a whole day's
// indexing, and every posting sent again to its term's holders, at each
// restart. A clean stop now leaves a Mark: the archive's leaf sums
// (archive.LeafHashes) at a moment when every version the node had
// stored was indexed and delivered (Service.Settled), and the key ranges
// the node owned throughout: when its backfill started, when it ended,
// and at the stop. The next start takes the mark (reads and removes it,
// so that a crash from then on means a whole backfill again) and
// backfills only the URLs the mark cannot vouch for: those whose leaf
// changed since (versions stored or purged while the node was down, or
// imported as their owner while it ran: Service.Imported) and those
// outside a range it owned throughout (taken over while it ran or while
// it was down), as every start did before for all of them.

// markState is a Service's record for its Mark: the owned ranges when
// the backfill started and ended, and the leaves of versions imported as
// their owner (Imported).
type markState struct {
	markMu    sync.Mutex
	atStart   []archive.KeyRange
	atEnd     []archive.KeyRange
	ranged    bool         // atStart and atEnd were recorded
	dirtyLeaf map[int]bool // leaves of versions Imported
}

func (sv *Service) owned() []archive.KeyRange {
	if sv.Owned == nil {
		return nil
	}
	return sv.Owned()
}

// recordRanges records the owned ranges at the backfill's start and end.
func (sv *Service) recordRanges(start, end []archive.KeyRange) {
	sv.markMu.Lock()
	defer sv.markMu.Unlock()
	sv.atStart, sv.atEnd, sv.ranged = start, end, sv.Owned != nil
}

// Imported records a version the node imported (a replica's record) of a
// URL it owns: nothing indexes it now (its owner indexed it when it
// stored it, but for a repair's version a crash kept from that), and the
// node's next start backfills its URL's leaf, as every start used to.
func (sv *Service) Imported(v archive.Version) {
	sv.markMu.Lock()
	defer sv.markMu.Unlock()
	if sv.dirtyLeaf == nil {
		sv.dirtyLeaf = map[int]bool{}
	}
	sv.dirtyLeaf[archive.LeafOf(v.Key)] = true
}

// Mark returns the mark a clean stop leaves, given the archive's leaf
// sums (read after the archive took its last write) and the ranges the
// node owns now, or nil if the service is not Settled or recorded no
// ranges (Owned unset). Leaves of Imported versions are recorded with a
// count of -1, which no archive's leaf has: the next start backfills
// them.
func (sv *Service) Mark(leaves []archive.DirSum, ownedNow []archive.KeyRange) *Mark {
	if !sv.Settled() || len(leaves) != archive.Leaves {
		return nil
	}
	sv.markMu.Lock()
	defer sv.markMu.Unlock()
	if !sv.ranged {
		return nil
	}
	ls := slices.Clone(leaves)
	for i := range sv.dirtyLeaf {
		ls[i] = archive.DirSum{Count: -1}
	}
	return &Mark{Leaves: ls, Owned: [][]archive.KeyRange{sv.atStart, sv.atEnd, ownedNow}}
}

// MarkFile is the mark's name in the posting store's directory: a
// directory removed or replaced takes its mark with it.
const MarkFile = "SETTLED"

const markMagic = "herod search mark 1\n"

// maxMarkRanges bounds the ranges of one of a mark's lists (a node runs
// at most a few hundred virtual servers), maxMarkLists their lists.
const (
	maxMarkRanges = 1 << 16
	maxMarkLists  = 8
)

// Mark is what a clean stop records for the next start's backfill.
type Mark struct {
	// Leaves are the archive's sums of its archive.Leaves leaf
	// directories, indexed by archive.LeafOf.
	Leaves []archive.DirSum
	// Owned are lists of key ranges (A, B] the node owned at moments of
	// its run: a key it owned throughout lies in a range of every list.
	Owned [][]archive.KeyRange
}

// owned reports whether key lay in a range of every list of Owned.
func (m *Mark) owned(key id.ID) bool {
	if len(m.Owned) == 0 {
		return false
	}
	for _, rs := range m.Owned {
		if !slices.ContainsFunc(rs, func(r archive.KeyRange) bool { return r.Contains(key) }) {
			return false
		}
	}
	return true
}

// Changed returns the test of the keys a start must backfill, given the
// archive's leaf sums now, and how many leaves changed: a key whose
// leaf's sum or count differs from the mark's, or that some list of
// Owned does not hold.
func (m *Mark) Changed(now []archive.DirSum) (func(key id.ID) bool, int) {
	changed := make([]bool, archive.Leaves)
	n := 0
	for i := range changed {
		if i >= len(now) || i >= len(m.Leaves) || now[i] != m.Leaves[i] {
			changed[i] = true
			n++
		}
	}
	return func(key id.ID) bool { return changed[archive.LeafOf(key)] || !m.owned(key) }, n
}

// encode returns the mark's file: the magic line, the leaves (sum and
// varint count), the range lists (uvarint lengths, ranges of two ids),
// and a SHA-256 of all that.
func (m *Mark) encode() ([]byte, error) {
	if len(m.Leaves) != archive.Leaves {
		return nil, fmt.Errorf("search mark: %d leaves, want %d", len(m.Leaves), archive.Leaves)
	}
	if len(m.Owned) > maxMarkLists {
		return nil, fmt.Errorf("search mark: %d range lists, over %d", len(m.Owned), maxMarkLists)
	}
	b := make([]byte, 0, len(markMagic)+archive.Leaves*(id.Size+2)+64)
	b = append(b, markMagic...)
	for _, d := range m.Leaves {
		b = append(b, d.Sum[:]...)
		b = binary.AppendVarint(b, d.Count)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Owned)))
	for _, rs := range m.Owned {
		if len(rs) > maxMarkRanges {
			return nil, fmt.Errorf("search mark: %d ranges, over %d", len(rs), maxMarkRanges)
		}
		b = binary.AppendUvarint(b, uint64(len(rs)))
		for _, r := range rs {
			b = append(b, r.A[:]...)
			b = append(b, r.B[:]...)
		}
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...), nil
}

var errMark = errors.New("search mark: malformed")

func decodeMark(b []byte) (*Mark, error) {
	if len(b) < len(markMagic)+sha256.Size || !bytes.HasPrefix(b, []byte(markMagic)) {
		return nil, errMark
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum", errMark)
	}
	p := body[len(markMagic):]
	m := &Mark{Leaves: make([]archive.DirSum, archive.Leaves)}
	for i := range m.Leaves {
		if len(p) < id.Size {
			return nil, fmt.Errorf("%w: short leaves", errMark)
		}
		copy(m.Leaves[i].Sum[:], p)
		c, k := binary.Varint(p[id.Size:])
		if k <= 0 {
			return nil, fmt.Errorf("%w: leaf count", errMark)
		}
		m.Leaves[i].Count = c
		p = p[id.Size+k:]
	}
	lists, k := binary.Uvarint(p)
	if k <= 0 || lists > maxMarkLists {
		return nil, fmt.Errorf("%w: range lists", errMark)
	}
	p = p[k:]
	m.Owned = make([][]archive.KeyRange, lists)
	for i := range m.Owned {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > maxMarkRanges || uint64(len(p)-k) < n*2*id.Size {
			return nil, fmt.Errorf("%w: ranges", errMark)
		}
		p = p[k:]
		rs := make([]archive.KeyRange, n)
		for j := range rs {
			copy(rs[j].A[:], p)
			copy(rs[j].B[:], p[id.Size:])
			p = p[2*id.Size:]
		}
		m.Owned[i] = rs
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the ranges", errMark, len(p))
	}
	return m, nil
}

// WriteMark records m at path, whole or not at all (atomicfile).
func WriteMark(path string, m *Mark) error {
	b, err := m.encode()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return fmt.Errorf("search mark: %w", err)
	}
	return nil
}

// TakeMark reads the mark at path and removes it, the removal synced
// before it returns: nil and no error when there is none. A mark that
// cannot be read or decoded is removed too and reported as an error (the
// caller backfills everything).
func TakeMark(path string) (*Mark, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("search mark: %w", err)
	}
	m, derr := decodeMark(b)
	if err := atomicfile.Remove(path); err != nil {
		return nil, fmt.Errorf("search mark: %w", err)
	}
	if derr != nil {
		return nil, derr
	}
	return m, nil
}
