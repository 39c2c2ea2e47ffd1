package search

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/herod-archive/herod/internal/binread"
	"github.com/herod-archive/herod/internal/id"
)

// The compact form of a set of postings, what an add carries to a
// term's holder: each version once, each term once.
//
//	byte      setFormat
//	uvarint   versions; each: uvarint len, URL, key(20), varint From, varint To, uvarint DocLen
//	uvarint   terms; each: uvarint len, term, uvarint postings,
//	          each: uvarint version index (a delta from the one before), freqs
//
// freqs is uvarint(tf<<1 | in title), then the title tf if in title (as
// in the store's blocks). A posting's key travels as it is: the
// receiver checks it against its URL where it must (a query's merge, a
// sync's pull).

// setFormat is the first byte of a posting set.
const setFormat = 1

// setVersion is what a posting set says once of a version.
type setVersion struct {
	url    string
	key    id.ID
	from   int64
	to     int64
	docLen uint32
}

func compareSetVersion(a, b setVersion) int {
	return cmp.Or(strings.Compare(a.url, b.url), a.key.Cmp(b.key), cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to), cmp.Compare(a.docLen, b.docLen))
}

// AppendPostingSet appends the compact form of ps (any order; the
// decoder returns them by term, then by URL and time, and postings of one
// term and version by frequencies).
func AppendPostingSet(b []byte, ps []Posting) []byte {
	// Number the versions as they come: the indexer's postings come a
	// version at a time, so a posting whose version is the one before's
	// takes its number, and a map numbers the others. Then only the
	// distinct versions are sorted (a sort of one entry a posting and a
	// search each were most of an add's encoding).
	num := make([]int32, len(ps))
	var vs []setVersion
	seen := make(map[setVersion]int32)
	for i, p := range ps {
		v := setVersion{p.URL, p.Key, p.From, p.To, p.DocLen}
		if i > 0 && v == vs[num[i-1]] {
			num[i] = num[i-1]
			continue
		}
		n, ok := seen[v]
		if !ok {
			n = int32(len(vs))
			vs = append(vs, v)
			seen[v] = n
		}
		num[i] = n
	}
	order := make([]int32, len(vs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return compareSetVersion(vs[x], vs[y]) })
	rank := make([]int32, len(vs))
	for r, n := range order {
		rank[n] = int32(r)
	}
	type ref struct {
		term string
		vi   int32 // rank among the versions
		tf   uint32
		ttf  uint32
	}
	refs := make([]ref, len(ps))
	for i, p := range ps {
		refs[i] = ref{p.Term, rank[num[i]], p.TF, p.TitleTF}
	}
	slices.SortFunc(refs, func(x, y ref) int {
		return cmp.Or(strings.Compare(x.term, y.term), cmp.Compare(x.vi, y.vi), cmp.Compare(x.tf, y.tf), cmp.Compare(x.ttf, y.ttf))
	})
	b = append(b, setFormat)
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, n := range order {
		v := vs[n]
		b = binary.AppendUvarint(b, uint64(len(v.url)))
		b = append(b, v.url...)
		b = append(b, v.key[:]...)
		b = binary.AppendVarint(b, v.from)
		b = binary.AppendVarint(b, v.to)
		b = binary.AppendUvarint(b, uint64(v.docLen))
	}
	terms := 0
	for i := range refs {
		if i == 0 || refs[i].term != refs[i-1].term {
			terms++
		}
	}
	b = binary.AppendUvarint(b, uint64(terms))
	for i := 0; i < len(refs); {
		j := i
		for j < len(refs) && refs[j].term == refs[i].term {
			j++
		}
		b = binary.AppendUvarint(b, uint64(len(refs[i].term)))
		b = append(b, refs[i].term...)
		b = binary.AppendUvarint(b, uint64(j-i))
		prev := int32(0)
		for _, r := range refs[i:j] {
			b = binary.AppendUvarint(b, uint64(r.vi-prev))
			prev = r.vi
			b = appendFreqs(b, r.tf, r.ttf)
		}
		i = j
	}
	return b
}

// DecodePostingSet decodes a posting set of exactly n postings that
// fills b, each checked (ErrBadPosting for any fault).
func DecodePostingSet(b []byte, n int) ([]Posting, error) {
	if len(b) == 0 || b[0] != setFormat {
		return nil, fmt.Errorf("%w: not a posting set", ErrBadPosting)
	}
	r := binread.New(b[1:])
	nv := r.Uvarint()
	if r.Err() == nil && (nv > uint64(n) || nv > uint64(r.Len())) {
		r.Fail(fmt.Errorf("%d versions for %d postings", nv, n))
	}
	vs := make([]setVersion, 0, min(nv, 1<<16))
	for i := uint64(0); i < nv && r.Err() == nil; i++ {
		v := setVersion{url: string(r.Bytes(maxURLLen))}
		r.Copy(v.key[:])
		v.from, v.to, v.docLen = r.Varint(), r.Varint(), r.Uint32()
		vs = append(vs, v)
	}
	nt := r.Uvarint()
	if r.Err() == nil && nt > uint64(n) {
		r.Fail(fmt.Errorf("%d terms for %d postings", nt, n))
	}
	ps := make([]Posting, 0, min(n, 1<<16))
	for t := uint64(0); t < nt && r.Err() == nil; t++ {
		term := string(r.Bytes(MaxTermLen))
		k := r.Uvarint()
		if r.Err() == nil && (k == 0 || k > uint64(n-len(ps))) {
			r.Fail(fmt.Errorf("term of %d postings", k))
		}
		vi := uint64(0)
		for i := uint64(0); i < k && r.Err() == nil; i++ {
			vi += r.Uvarint()
			tf, ttf := readFreqs(&r)
			if r.Err() == nil && vi >= uint64(len(vs)) {
				r.Fail(fmt.Errorf("version %d of %d", vi, len(vs)))
			}
			if r.Err() != nil {
				break
			}
			v := vs[vi]
			ps = append(ps, Posting{Term: term, Key: v.key, URL: v.url, From: v.from, To: v.to, TF: tf, TitleTF: ttf, DocLen: v.docLen})
		}
	}
	if r.Err() == nil && r.Len() != 0 {
		r.Fail(errors.New("trailing bytes"))
	}
	if r.Err() == nil && len(ps) != n {
		r.Fail(fmt.Errorf("%d postings, header says %d", len(ps), n))
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("%w: set: %v", ErrBadPosting, r.Err())
	}
	for _, p := range ps {
		if err := p.Check(); err != nil {
			return nil, err
		}
	}
	return ps, nil
}
