package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// A term's postings are stored in blocks: goleveldb values keyed by the
// term and the block's upper bound (blockKey), each holding up to
// maxBlock entries sorted by version number. A term's blocks cover the
// numbers (previous block's bound, bound]; its last block's bound is
// tailBound, so the block a number falls in is one Seek away (no Prev,
// which goleveldb makes slow over a journal of rewritten blocks). A
// block is uvarint(count), uvarint(first number), then each entry: its
// number as a delta from the one before (not for the first) and the
// term's frequencies: uvarint(tf<<1 | in title), then the title tf if in
// title. A posting is thus two or three bytes; the version's URL, key,
// range and length are written once, in the version table
// (versions.go).

// maxBlock is the most entries a block holds. A Put rewrites the blocks
// its entries fall in, so a block is small enough to rewrite and large
// enough that its key costs little per entry.
const maxBlock = 128

// entry is one posting in a block: a local version number and the
// term's frequencies in that version.
type entry struct {
	num     uint32
	tf      uint32
	titleTF uint32
}

// blockPrefix is the key prefix of term's blocks.
func blockPrefix(term string) []byte {
	b := make([]byte, 0, len(term)+2+4)
	b = append(b, pBlock)
	b = append(b, term...)
	return append(b, 0)
}

// tailBound is the bound of a term's last block.
const tailBound = math.MaxUint32

// blockKey is the key of term's block of upper bound num.
func blockKey(term string, num uint32) []byte {
	return binary.BigEndian.AppendUint32(blockPrefix(term), num)
}

// blockKeyTerm returns the term and bound of a block key.
func blockKeyTerm(k []byte) (term []byte, bound uint32, ok bool) {
	if len(k) < 1+1+1+4 || k[0] != pBlock || k[len(k)-5] != 0 {
		return nil, 0, false
	}
	return k[1 : len(k)-5], binary.BigEndian.Uint32(k[len(k)-4:]), true
}

// appendBlock encodes es (num ascending and distinct, not empty) as a
// block value.
func appendBlock(b []byte, es []entry) []byte {
	b = binary.AppendUvarint(b, uint64(len(es)))
	b = binary.AppendUvarint(b, uint64(es[0].num))
	prev := uint32(0)
	for i, e := range es {
		if i > 0 {
			b = binary.AppendUvarint(b, uint64(e.num-prev))
		}
		prev = e.num
		b = appendFreqs(b, e.tf, e.titleTF)
	}
	return b
}

// appendFreqs appends a term's frequencies: uvarint(tf<<1 | in title),
// then the title tf if in title.
func appendFreqs(b []byte, tf, titleTF uint32) []byte {
	flag := uint64(0)
	if titleTF > 0 {
		flag = 1
	}
	b = binary.AppendUvarint(b, uint64(tf)<<1|flag)
	if flag == 1 {
		b = binary.AppendUvarint(b, uint64(titleTF))
	}
	return b
}

// readFreqs reads what appendFreqs wrote.
func (r *reader) freqs() (tf, titleTF uint32) {
	v := r.uvarint()
	if v>>1 > math.MaxUint32 {
		r.err = errors.New("count out of range")
		return 0, 0
	}
	tf = uint32(v >> 1)
	if v&1 == 1 {
		titleTF = r.u32()
		if titleTF == 0 {
			r.err = errors.New("title flag without a title count")
		}
	}
	return tf, titleTF
}

// blockCount returns the number of entries a block value says it holds.
func blockCount(v []byte) int {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > maxBlock*4 {
		return 0
	}
	return int(n)
}

// decodeBlock decodes a block value of upper bound bound, appending to
// es. Numbers must ascend strictly within the bound and counts be sane.
func decodeBlock(es []entry, bound uint32, v []byte) ([]entry, error) {
	r := reader{b: v}
	n := r.uvarint()
	if r.err == nil && (n == 0 || n > uint64(len(v))) {
		r.err = fmt.Errorf("block of %d entries", n)
	}
	num := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		if i > 0 {
			d := r.uvarint()
			if d == 0 || num+d > uint64(bound) {
				r.err = errors.New("version numbers out of order")
				break
			}
			num += d
		}
		tf, ttf := r.freqs()
		if r.err == nil && num > uint64(bound) {
			r.err = fmt.Errorf("number %d past the block's bound %d", num, bound)
		}
		if r.err == nil && (tf == 0 || ttf > tf) {
			r.err = fmt.Errorf("counts tf %d title %d", tf, ttf)
		}
		es = append(es, entry{num: uint32(num), tf: tf, titleTF: ttf})
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return es, fmt.Errorf("%w: block: %v", ErrBadPosting, r.err)
	}
	return es, nil
}

// mergeEntries merges add (sorted by num, distinct) into old (the same):
// an entry of add replaces old's of its number. It returns the merged
// list, the entries added (new numbers) and whether anything changed;
// onChange, if set, is told each entry added (old nil) or changed.
func mergeEntries(old, add []entry, onChange func(old *entry, e entry)) (out []entry, added int, changed bool) {
	out = make([]entry, 0, len(old)+len(add))
	i, j := 0, 0
	for i < len(old) || j < len(add) {
		switch {
		case j == len(add) || (i < len(old) && old[i].num < add[j].num):
			out = append(out, old[i])
			i++
		case i == len(old) || add[j].num < old[i].num:
			out = append(out, add[j])
			added++
			changed = true
			if onChange != nil {
				onChange(nil, add[j])
			}
			j++
		default:
			if old[i] != add[j] {
				changed = true
				if onChange != nil {
					onChange(&old[i], add[j])
				}
			}
			out = append(out, add[j])
			i++
			j++
		}
	}
	return out, added, changed
}

// sortEntries sorts es by number, the last of equal numbers kept.
func sortEntries(es []entry) []entry {
	slices.SortStableFunc(es, func(a, b entry) int {
		switch {
		case a.num < b.num:
			return -1
		case a.num > b.num:
			return 1
		}
		return 0
	})
	out := es[:0]
	for i, e := range es {
		if i+1 < len(es) && es[i+1].num == e.num {
			continue
		}
		out = append(out, e)
	}
	return out
}
