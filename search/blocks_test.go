package search

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// model is what a store must answer: every posting by identity, merged
// as Put says (the earliest known end of a version wins, the newest
// frequencies, URL and length).
type model struct {
	ps   map[string]map[vident]Posting // term → identity → posting
	ends map[vident]int64
	docs map[vident]uint32 // document rows: their lengths
}

// putDocs adds document rows: their versions' ends merge as postings'.
func (m *model) putDocs(rows []DocRow) {
	for _, r := range rows {
		k := vident{r.Key, r.From}
		end, ok := m.ends[k]
		if !ok {
			end = r.To
		}
		m.ends[k] = mergeEnd(end, r.To)
		m.docs[k] = r.DocLen
	}
	for _, byID := range m.ps {
		for k, p := range byID {
			p.To = m.ends[k]
			byID[k] = p
		}
	}
}

// docStats is what DocStats answers as of at: as of the end of its
// hour.
func (m *model) docStats(at int64) DocStats {
	at = at - at%docStatsGrain + docStatsGrain - 1
	var st DocStats
	for k, n := range m.docs {
		if v := (version{from: k.from, to: m.ends[k]}); v.liveAt(at) {
			st.N++
			st.SumLen += int64(n)
		}
	}
	return st
}

func (m *model) put(ps []Posting) {
	for _, p := range ps {
		k := vident{p.Key, p.From}
		end, ok := m.ends[k]
		if !ok {
			end = p.To
		} else {
			end = mergeEnd(end, p.To)
		}
		m.ends[k] = end
		if m.ps[p.Term] == nil {
			m.ps[p.Term] = map[vident]Posting{}
		}
		m.ps[p.Term][k] = p
	}
	// A version's URL, length and end are one for all its postings.
	last := map[vident]Posting{}
	for _, p := range ps {
		last[vident{p.Key, p.From}] = p
	}
	for _, byID := range m.ps {
		for k, p := range byID {
			if l, ok := last[k]; ok {
				p.URL, p.DocLen = l.URL, l.DocLen
			}
			p.To = m.ends[k]
			byID[k] = p
		}
	}
}

func (m *model) count() (terms, postings int64) {
	for _, byID := range m.ps {
		if len(byID) > 0 {
			terms++
		}
		postings += int64(len(byID))
	}
	return terms, postings
}

// TestStoreModel runs random writes, re-sends, ends, document rows and
// purges against a store and a naive model of it, and compares every
// term's postings as of several times (all, and those of some URL
// keys), the collection statistics, the counts and Range, across a
// reopen: with the pending ends folded into their rows as soon as a
// few are pending, and never.
func TestStoreModel(t *testing.T) {
	for _, fold := range []int64{3, 1 << 40} {
		t.Run(fmt.Sprintf("fold=%d", fold), func(t *testing.T) { testStoreModel(t, fold) })
	}
}

func testStoreModel(t *testing.T, foldMin int64) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s := openTestStore(t, dir)
	s.foldMin = foldMin
	defer func() { s.Close() }()
	rng := rand.New(rand.NewPCG(7, 38))
	m := &model{ps: map[string]map[vident]Posting{}, ends: map[vident]int64{}, docs: map[vident]uint32{}}
	pending := false // ends were pending at a check
	terms := []string{"war", "peace", "ship", "sea", "herodotus", "persia"}
	urls := make([]string, 60)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://h%d.example/p%d", i%4, i)
	}
	docLen := map[vident]uint32{}
	for round := range 40 {
		var ps []Posting
		for range 1 + rng.IntN(300) {
			u := urls[rng.IntN(len(urls))]
			from := int64(10 * (1 + rng.IntN(8)))
			to := Open
			if rng.IntN(3) == 0 {
				to = from + int64(5*(1+rng.IntN(4)))
			}
			k := vident{id.OfString(u), from}
			if docLen[k] == 0 {
				docLen[k] = uint32(50 + rng.IntN(50))
			}
			tf := uint32(1 + rng.IntN(5))
			ps = append(ps, Posting{Term: terms[rng.IntN(len(terms))], Key: k.key, URL: u, From: from, To: to,
				TF: tf, TitleTF: uint32(rng.IntN(int(tf) + 1)), DocLen: docLen[k]})
		}
		must(t, s.Put(ctx, ps))
		m.put(ps)
		// Stored versions sent again whole (a crawl ending them, a
		// backfill): with an end, or with one frequency changed.
		resend := resendVersions(m, rng, 3+rng.IntN(6))
		must(t, s.Put(ctx, resend))
		m.put(resend)
		// Document rows of some versions, some with an end.
		var rows []DocRow
		for range rng.IntN(8) {
			u := urls[rng.IntN(len(urls))]
			k := vident{id.OfString(u), int64(10 * (1 + rng.IntN(8)))}
			if docLen[k] == 0 {
				docLen[k] = uint32(50 + rng.IntN(50))
			}
			to := Open
			if rng.IntN(2) == 0 {
				to = k.from + int64(1+rng.IntN(30))
			}
			rows = append(rows, DocRow{Key: k.key, URL: u, From: k.from, To: to, DocLen: docLen[k]})
		}
		must(t, s.PutDocs(ctx, rows))
		m.putDocs(rows)
		checkSums(t, s)
		pending = pending || s.ends > 0
		if round%13 == 12 {
			cut := urls[rng.IntN(len(urls))]
			n, err := s.DeleteWhere(ctx, func(u string, from int64) bool { return u == cut || from == 30 })
			must(t, err)
			want := 0
			for _, byID := range m.ps {
				for k, p := range byID {
					if p.URL == cut || p.From == 30 {
						delete(byID, k)
						want++
					}
				}
			}
			for k := range m.ends {
				if k.from == 30 || k.key == id.OfString(cut) {
					delete(m.ends, k)
					delete(m.docs, k)
				}
			}
			if n != want {
				t.Fatalf("round %d: purge deleted %d postings, want %d", round, n, want)
			}
		}
		if round == 20 {
			must(t, s.Close())
			s = openTestStore(t, dir)
			s.foldMin = foldMin
		}
		checkModel(t, s, m, terms, round)
		for _, at := range []int64{5, 10, 25, 40, 60, 1000} {
			st, err := s.DocStats(ctx, at)
			must(t, err)
			if want := m.docStats(at); st != want {
				t.Fatalf("round %d: doc stats at %d: %+v, want %+v", round, at, st, want)
			}
		}
		checkKeys(t, s, m, terms, urls, rng, round)
	}
	if !pending {
		t.Error("no end was ever pending")
	}
}

// checkKeys compares the postings of a few URL keys, as the engine asks
// for its candidates' other terms, with the model's.
func checkKeys(t *testing.T, s *Store, m *model, terms, urls []string, rng *rand.Rand, round int) {
	t.Helper()
	want := map[id.ID]bool{}
	var keys []id.ID
	for range 1 + rng.IntN(6) {
		k := id.OfString(urls[rng.IntN(len(urls))])
		if !want[k] {
			want[k] = true
			keys = append(keys, k)
		}
	}
	order := func(a, b Posting) int { return cmp.Or(strings.Compare(a.URL, b.URL), cmp.Compare(a.From, b.From)) }
	for _, term := range terms {
		for _, at := range []int64{10, 25, 60} {
			l, err := s.Postings(context.Background(), PostingQuery{Term: term, At: at, Keys: keys, Limit: 10_000})
			must(t, err)
			var exp []Posting
			for _, p := range m.ps[term] {
				if p.Live(at) && want[p.Key] {
					exp = append(exp, p)
				}
			}
			slices.SortFunc(exp, order)
			got := slices.Clone(l.Postings)
			slices.SortFunc(got, order)
			if !slices.Equal(got, exp) || !l.Complete {
				t.Fatalf("round %d, %q at %d, keys %d: %v, want %v", round, term, at, len(keys), got, exp)
			}
		}
	}
}

// resendVersions returns every posting the model holds of n versions
// of it, each version's ended (sometimes) or one of its frequencies
// changed (sometimes).
func resendVersions(m *model, rng *rand.Rand, n int) []Posting {
	var ids []vident
	for k := range m.ends {
		ids = append(ids, k)
	}
	slices.SortFunc(ids, func(a, b vident) int { return cmp.Or(a.key.Cmp(b.key), cmp.Compare(a.from, b.from)) })
	terms := slices.Sorted(maps.Keys(m.ps))
	var out []Posting
	for range min(n, len(ids)) {
		k := ids[rng.IntN(len(ids))]
		end := Open
		if rng.IntN(2) == 0 {
			end = k.from + int64(1+rng.IntN(20))
		}
		bump := rng.IntN(3) == 0
		for _, term := range terms {
			p, ok := m.ps[term][k]
			if !ok {
				continue
			}
			p.To = end
			if bump {
				p.TF++
				bump = false
			}
			out = append(out, p)
		}
	}
	return out
}

// checkSums checks that every version row's sum of entries (when
// known) is what the blocks hold of it.
func checkSums(t *testing.T, s *Store) {
	t.Helper()
	sums := map[uint32]*entrySum{}
	for _, blk := range storedBlocks(t, s) {
		for _, e := range blk.es {
			if sums[e.num] == nil {
				sums[e.num] = &entrySum{known: true}
			}
			sums[e.num].add(blk.term, e)
		}
	}
	vit := s.db.NewIterator(util.BytesPrefix([]byte{pNum}), nil)
	defer vit.Release()
	for vit.Next() {
		v, err := decodeVersion(vit.Key(), vit.Value())
		must(t, err)
		want := entrySum{known: true}
		if sums[v.num] != nil {
			want = *sums[v.num]
		}
		if v.sum.known && v.sum != want {
			t.Fatalf("version %d (%s %d): row's sum %+v, blocks' %+v", v.num, v.url, v.from, v.sum, want)
		}
	}
}

// storedBlock is a block as the store holds it.
type storedBlock struct {
	term  string
	bound uint32
	es    []entry
	tail  bool // a chunk of the term's tail
}

// storedBlocks returns every block the store holds, each term's in
// bound order (the tail last), and checks the layout: each full block
// has its index key and no index key lacks its block, each block
// decodes, and a term's blocks cover its numbers in order.
func storedBlocks(t *testing.T, s *Store) []storedBlock {
	t.Helper()
	index := map[string]bool{}
	it := s.db.NewIterator(util.BytesPrefix([]byte{pIndex}), nil)
	for it.Next() {
		index[string(it.Key())] = true
	}
	it.Release()
	full := 0
	it = s.db.NewIterator(util.BytesPrefix([]byte{pFull}), nil)
	for it.Next() {
		term, bound, ok := fullKeyTerm(it.Key())
		if !ok || !index[string(indexKey(string(term), bound))] {
			t.Fatalf("full block %q has no index key", it.Key())
		}
		full++
	}
	it.Release()
	if full != len(index) {
		t.Fatalf("%d full blocks, %d index keys", full, len(index))
	}
	var out []storedBlock
	must(t, eachTerm(s.db, func(tb []byte) error {
		term := string(tb)
		prev := int64(-1)
		return termBlocks(s.db, term, func(bound uint32, v []byte) error {
			es, err := decodeBlock(nil, bound, v)
			must(t, err)
			if int64(es[0].num) <= prev {
				t.Fatalf("term %q: block of bound %d starts at %d, after %d", term, bound, es[0].num, prev)
			}
			prev = int64(bound)
			tail := !index[string(indexKey(term, bound))]
			out = append(out, storedBlock{term, bound, es, tail})
			return nil
		})
	}))
	return out
}

func checkModel(t *testing.T, s *Store, m *model, terms []string, round int) {
	t.Helper()
	ctx := context.Background()
	order := func(a, b Posting) int { return cmp.Or(strings.Compare(a.URL, b.URL), cmp.Compare(a.From, b.From)) }
	for _, term := range terms {
		for _, at := range []int64{5, 10, 25, 40, 60, 1000} {
			l, err := s.Postings(ctx, PostingQuery{Term: term, At: at, Limit: 10_000})
			must(t, err)
			var want []Posting
			for _, p := range m.ps[term] {
				if p.Live(at) {
					want = append(want, p)
				}
			}
			slices.SortFunc(want, order)
			got := slices.Clone(l.Postings)
			slices.SortFunc(got, order)
			if !slices.Equal(got, want) || l.DF != int64(len(want)) || !l.Complete {
				t.Fatalf("round %d, %q at %d: %d postings (df %d), want %d\ngot  %v\nwant %v", round, term, at, len(got), l.DF, len(want), got, want)
			}
		}
	}
	wt, wp := m.count()
	if c := s.Counts(); c.Terms != wt || c.Postings != wp {
		t.Fatalf("round %d: counts %+v, want %d terms %d postings", round, c, wt, wp)
	}
	n := int64(0)
	must(t, s.Range(ctx, id.ID{}, id.ID{}, func(Posting) error { n++; return nil }))
	if n != wp {
		t.Fatalf("round %d: Range gave %d postings, want %d", round, n, wp)
	}
}

// TestStoreBlocksSplit: a term of many versions, written out of order
// and in pieces, lies in full blocks but its last, and an end sent for
// one version changes that version alone.
func TestStoreBlocksSplit(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "s"))
	defer s.Close()
	const n = 5*maxBlock + 17
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	var ps []Posting
	for _, i := range perm {
		ps = append(ps, post("war", fmt.Sprintf("http://a.example/%d", i), int64(i+1), Open, 1))
	}
	for len(ps) > 0 {
		k := min(len(ps), 97)
		must(t, s.Put(ctx, ps[:k]))
		ps = ps[k:]
	}
	blocks := storedBlocks(t, s)
	tail := 0
	for i, blk := range blocks {
		switch {
		case !blk.tail && (len(blk.es) > maxBlock || len(blk.es) == 0),
			blk.tail && blk.bound != tailBound && len(blk.es) != tailChunk,
			blk.tail && blk.bound == tailBound && len(blk.es) >= tailChunk:
			t.Errorf("block %d (bound %d, tail %v) holds %d", i, blk.bound, blk.tail, len(blk.es))
		}
		if blk.tail {
			tail += len(blk.es)
		}
	}
	if len(blocks) != 7 || !blocks[5].tail || blocks[6].bound != tailBound || tail != 17 {
		t.Errorf("%d blocks, a tail of %d, want 5 full and a tail of 17 in a sealed and an open chunk", len(blocks), tail)
	}
	if c := s.Counts(); c.Postings != n || c.Terms != 1 {
		t.Errorf("counts %+v, want %d postings of 1 term", c, n)
	}
	// Version 42 (From 42) ends at 50: seen at 45, not at 60.
	must(t, s.Put(ctx, []Posting{post("war", "http://a.example/41", 42, 50, 1)}))
	for at, want := range map[int64]int64{45: 45, 60: 59, 1 << 40: n - 1} {
		l, err := s.Postings(ctx, PostingQuery{Term: "war", At: at})
		must(t, err)
		if l.DF != want {
			t.Errorf("at %d: df %d, want %d", at, l.DF, want)
		}
	}
}

// TestStoreMigrates: a store of the first format (a row a posting and a
// row a document) is converted at open, and answers as before.
func TestStoreMigrates(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	db, err := leveldb.OpenFile(dir, nil)
	must(t, err)
	a := "http://a.example/"
	var b leveldb.Batch
	for _, p := range []Posting{post("war", a, 10, 20, 3), post("war", a, 20, Open, 5), post("peace", a, 10, 20, 1)} {
		k := append([]byte{pPosting}, p.Term...)
		k = append(k, 0)
		k = append(k, p.Key[:]...)
		k = append(k, byte(0), 0, 0, 0, 0, 0, 0, byte(p.From))
		v := appendVarints(nil, p.To, int64(p.TF), int64(p.TitleTF), int64(p.DocLen))
		b.Put(k, append(v, p.URL...))
	}
	key := id.OfString(a)
	dk := append(append([]byte{pDoc}, key[:]...), 0, 0, 0, 0, 0, 0, 0, 20)
	b.Put(dk, append(appendVarints(nil, Open, 100), a...))
	b.Put([]byte{pPosting, 'x'}, []byte("not a posting"))
	must(t, db.Write(&b, &opt.WriteOptions{Sync: true}))
	must(t, db.Close())

	s := openTestStore(t, dir)
	if c := s.Counts(); c.Postings != 3 || c.Terms != 2 || c.Docs != 1 {
		t.Errorf("migrated counts %+v", c)
	}
	l, err := s.Postings(ctx, PostingQuery{Term: "war", At: 15})
	must(t, err)
	if len(l.Postings) != 1 || l.Postings[0] != post("war", a, 10, 20, 3) {
		t.Errorf("war at 15: %+v", l.Postings)
	}
	st, err := s.DocStats(ctx, 25)
	must(t, err)
	if st.N != 1 || st.SumLen != 100 {
		t.Errorf("doc stats %+v", st)
	}
	it := s.db.NewIterator(nil, nil)
	for it.Next() {
		if k := it.Key()[0]; k == pPosting || k == pDoc {
			t.Errorf("first-format key %q left", it.Key())
		}
	}
	it.Release()
	must(t, s.Close())
	// A store of a later format is refused, not misread.
	db, err = leveldb.OpenFile(dir, nil)
	must(t, err)
	must(t, db.Put(formatKey, []byte{storeFormat + 1}, nil))
	must(t, db.Close())
	if _, err := OpenStore(dir); err == nil {
		t.Error("a later format: opened")
	}
}

func appendVarints(b []byte, to int64, us ...int64) []byte {
	b = appendVarint(b, to)
	for _, u := range us {
		b = appendUvarint(b, uint64(u))
	}
	return b
}

func appendVarint(b []byte, v int64) []byte   { return binary.AppendVarint(b, v) }
func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// TestStoreFormat2: a store of format 2 (version rows without a sum of
// their entries) opens as format 3; its versions, sent again, are
// merged as before (their sums stay unknown) and new ones get sums.
func TestStoreFormat2(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s := openTestStore(t, dir)
	a, b := "http://a.example/", "http://b.example/"
	must(t, s.Put(ctx, []Posting{post("war", a, 10, Open, 3), post("peace", a, 10, Open, 1)}))
	// Make it a format-2 store: the format key, and the row without its sum.
	v, err := s.db.Get(numKey(0), nil)
	must(t, err)
	row, err := decodeVersion(numKey(0), v)
	must(t, err)
	row.sum = entrySum{}
	must(t, s.db.Put(numKey(0), row.value(), nil))
	must(t, s.db.Put(formatKey, []byte{2}, nil))
	must(t, s.Close())

	s = openTestStore(t, dir)
	if f, err := s.db.Get(formatKey, nil); err != nil || f[0] != storeFormat {
		t.Fatalf("format %v %v, want %d", f, err, storeFormat)
	}
	// Its version ended, with one frequency changed; a new version.
	must(t, s.Put(ctx, []Posting{post("war", a, 10, 20, 4), post("peace", a, 10, 20, 1), post("war", b, 20, Open, 2)}))
	checkSums(t, s)
	l, err := s.Postings(ctx, PostingQuery{Term: "war", At: 15})
	must(t, err)
	if len(l.Postings) != 1 || l.Postings[0] != post("war", a, 10, 20, 4) {
		t.Fatalf("war at 15: %+v", l.Postings)
	}
	l, err = s.Postings(ctx, PostingQuery{Term: "war", At: 25})
	must(t, err)
	if len(l.Postings) != 1 || l.Postings[0] != post("war", b, 20, Open, 2) {
		t.Fatalf("war at 25: %+v", l.Postings)
	}
	for num, known := range map[uint32]bool{0: false, 1: true} {
		v, err := s.db.Get(numKey(num), nil)
		must(t, err)
		row, err := decodeVersion(numKey(num), v)
		must(t, err)
		if row.sum.known != known {
			t.Errorf("version %d: sum known %v, want %v", num, row.sum.known, known)
		}
	}
}

// TestStoreFormat3: a store of format 3 (a term's blocks under b term
// 0x00 bound, the last of up to maxBlock entries under tailBound) opens
// as format 5, its blocks moved to full blocks and tails and its
// identities to format 5's, and answers queries, counts and Range as
// before; writes go on in format 5.
func TestStoreFormat3(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s := openTestStore(t, dir)
	// war: 2 full blocks and a last one of maxBlock (sealed on the
	// move); peace: 1 full block and a last of 20; sea: a last of 5.
	var ps []Posting
	for i := range 3 * maxBlock {
		u := fmt.Sprintf("http://a.example/%d", i)
		ps = append(ps, post("war", u, int64(10+i), Open, 1+uint32(i%3)))
		if i < maxBlock+20 {
			ps = append(ps, post("peace", u, int64(10+i), int64(20+i), 2))
		}
		if i < 5 {
			ps = append(ps, post("sea", u, int64(10+i), Open, 4))
		}
	}
	must(t, s.Put(ctx, ps))
	type answer struct {
		counts Counts
		lists  map[string][]Posting
		rng    []Posting
	}
	ask := func() answer {
		a := answer{counts: s.Counts(), lists: map[string][]Posting{}}
		for _, term := range []string{"war", "peace", "sea"} {
			for _, at := range []int64{15, 100, 200, 1 << 40} {
				l, err := s.Postings(ctx, PostingQuery{Term: term, At: at, Limit: 10_000})
				must(t, err)
				k := fmt.Sprintf("%s@%d", term, at)
				a.lists[k] = l.Postings
			}
		}
		must(t, s.Range(ctx, id.ID{}, id.ID{}, func(p Posting) error { a.rng = append(a.rng, p); return nil }))
		order := func(a, b Posting) int {
			return cmp.Or(strings.Compare(a.Term, b.Term), strings.Compare(a.URL, b.URL), cmp.Compare(a.From, b.From))
		}
		slices.SortFunc(a.rng, order)
		return a
	}
	before := ask()
	// Make it a format-3 store: each term's entries in blocks of
	// maxBlock, the last (1 to maxBlock entries) under tailBound.
	var b leveldb.Batch
	byTerm := map[string][]entry{}
	for _, blk := range storedBlocks(t, s) {
		byTerm[blk.term] = append(byTerm[blk.term], blk.es...)
	}
	for _, p := range []byte{pFull, pIndex, pTail} {
		it := s.db.NewIterator(util.BytesPrefix([]byte{p}), nil)
		for it.Next() {
			b.Delete(slices.Clone(it.Key()))
		}
		it.Release()
	}
	for term, es := range byTerm {
		for len(es) > 0 {
			k := min(len(es), maxBlock)
			bound := es[k-1].num
			if k == len(es) {
				bound = tailBound
			}
			key := binary.BigEndian.AppendUint32(append(append([]byte{pBlock}, term...), 0), bound)
			b.Put(key, appendBlock(nil, es[:k]))
			es = es[k:]
		}
	}
	oldIdents(t, s, &b, false)
	b.Put(formatKey, []byte{3})
	must(t, s.db.Write(&b, nil))
	must(t, s.Close())

	s = openTestStore(t, dir)
	defer func() { s.Close() }()
	if f, err := s.db.Get(formatKey, nil); err != nil || f[0] != storeFormat {
		t.Fatalf("format %v %v, want %d", f, err, storeFormat)
	}
	it := s.db.NewIterator(util.BytesPrefix([]byte{pBlock}), nil)
	if it.Next() {
		t.Errorf("a format-3 block left: %q", it.Key())
	}
	it.Release()
	got := ask()
	if got.counts != before.counts || !maps.EqualFunc(got.lists, before.lists, slices.Equal) || !slices.Equal(got.rng, before.rng) {
		t.Fatalf("after the move: %+v, want %+v", got, before)
	}
	tails := map[string]int{}
	for _, blk := range storedBlocks(t, s) {
		if blk.tail {
			tails[blk.term] += len(blk.es)
		}
	}
	if want := map[string]int{"peace": 20, "sea": 5}; !maps.Equal(tails, want) {
		t.Errorf("tails %v, want %v", tails, want)
	}
	// Writes go on: a version ended, new ones appended.
	must(t, s.Put(ctx, []Posting{post("war", "http://a.example/0", 10, 12, 1), post("war", "http://b.example/", 1000, Open, 1), post("sea", "http://b.example/", 1000, Open, 1)}))
	checkSums(t, s)
	l, err := s.Postings(ctx, PostingQuery{Term: "war", At: 12, Limit: 10_000})
	must(t, err)
	if l.DF != 2 { // 11 and 12; 10 ended at 12
		t.Errorf("war at 12: df %d, want 2", l.DF)
	}
	if c := s.Counts(); c.Postings != before.counts.Postings+2 || c.Terms != 3 {
		t.Errorf("counts %+v after 2 new postings, before %+v", c, before.counts)
	}
}
