package search

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/herod-archive/herod/internal/id"
)

// oldIdents adds to b the writes that turn s's identities into those
// of format 4 and earlier (v key(20) from(8)), after folding its
// pending ends (formats before 5 had none), and if wholeTails its tails
// into format 4's (t term 0x00 → the whole tail).
func oldIdents(t *testing.T, s *Store, b *leveldb.Batch, wholeTails bool) {
	t.Helper()
	_, err := s.foldEnds()
	must(t, err)
	it := s.db.NewIterator(util.BytesPrefix([]byte{pIdent}), nil)
	defer it.Release()
	for it.Next() {
		k := it.Key()
		b.Delete(bytes.Clone(k))
		old := append([]byte{pVersion4}, k[9:]...)
		old = binary.BigEndian.AppendUint64(old, ^binary.BigEndian.Uint64(k[1:9]))
		b.Put(old, bytes.Clone(it.Value()))
	}
	must(t, it.Error())
	if !wholeTails {
		return
	}
	tails := map[string][]entry{}
	for _, blk := range storedBlocks(t, s) {
		if blk.tail {
			tails[blk.term] = append(tails[blk.term], blk.es...)
		}
	}
	for _, k := range keysWith(t, s, pTail) {
		b.Delete(k)
	}
	for term, es := range tails {
		b.Put(termPrefix(pTail, term), appendBlock(nil, es))
	}
}

// storeAnswers is what a store answers: counts, postings of terms as of
// times, Range and the collection statistics.
type storeAnswers struct {
	counts Counts
	lists  map[string][]Posting
	rng    []Posting
	stats  map[int64]DocStats
}

func answersOf(t *testing.T, s *Store, terms []string, times []int64) storeAnswers {
	t.Helper()
	ctx := context.Background()
	a := storeAnswers{counts: s.Counts(), lists: map[string][]Posting{}, stats: map[int64]DocStats{}}
	order := func(a, b Posting) int {
		return cmp.Or(strings.Compare(a.Term, b.Term), strings.Compare(a.URL, b.URL), cmp.Compare(a.From, b.From))
	}
	for _, term := range terms {
		for _, at := range times {
			l, err := s.Postings(ctx, PostingQuery{Term: term, At: at, Limit: 10_000})
			must(t, err)
			slices.SortFunc(l.Postings, order)
			a.lists[fmt.Sprintf("%s@%d", term, at)] = l.Postings
		}
	}
	for _, at := range times {
		st, err := s.DocStats(ctx, at)
		must(t, err)
		a.stats[at] = st
	}
	must(t, s.Range(ctx, id.ID{}, id.ID{}, func(p Posting) error { a.rng = append(a.rng, p); return nil }))
	slices.SortFunc(a.rng, order)
	return a
}

func (a storeAnswers) equal(b storeAnswers) bool {
	return a.counts == b.counts && maps.EqualFunc(a.lists, b.lists, slices.Equal) && slices.Equal(a.rng, b.rng) && maps.Equal(a.stats, b.stats)
}

// keysWith returns the keys of s's rows under prefix.
func keysWith(t *testing.T, s *Store, prefix byte) [][]byte {
	t.Helper()
	var out [][]byte
	it := s.db.NewIterator(util.BytesPrefix([]byte{prefix}), nil)
	defer it.Release()
	for it.Next() {
		out = append(out, bytes.Clone(it.Key()))
	}
	must(t, it.Error())
	return out
}

// TestStoreEndsApart: a stored version's end, its row otherwise
// unchanged, is written to the end table and its row is not; queries,
// Range and the collection statistics read it; a fold writes it into
// the row and empties the end table, and answers stay the same; a
// version whose row changes has its pending end folded in at once.
func TestStoreEndsApart(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s := openTestStore(t, dir)
	defer func() { s.Close() }()
	h := int64(docStatsGrain)
	a, b := "http://a.example/", "http://b.example/"
	must(t, s.Put(ctx, []Posting{post("war", a, 0, Open, 3), post("sea", a, 0, Open, 1), post("war", b, 0, Open, 2)}))
	must(t, s.PutDocs(ctx, []DocRow{{Key: id.OfString(a), URL: a, From: 0, To: Open, DocLen: 100}, {Key: id.OfString(b), URL: b, From: 0, To: Open, DocLen: 100}}))
	rowA, err := s.db.Get(numKey(0), nil)
	must(t, err)
	docA, err := s.db.Get(docKey(0), nil)
	must(t, err)
	// a changes at 2h: its old version's postings sent again with the
	// end, and a new version.
	must(t, s.Put(ctx, []Posting{post("war", a, 0, 2*h, 3), post("sea", a, 0, 2*h, 1), post("war", a, 2*h, Open, 1)}))
	must(t, s.PutDocs(ctx, []DocRow{{Key: id.OfString(a), URL: a, From: 0, To: 2 * h, DocLen: 100}, {Key: id.OfString(a), URL: a, From: 2 * h, To: Open, DocLen: 100}}))
	if r, _ := s.db.Get(numKey(0), nil); !bytes.Equal(r, rowA) {
		t.Errorf("the ended version's row was written again")
	}
	if r, _ := s.db.Get(docKey(0), nil); !bytes.Equal(r, docA) {
		t.Errorf("the ended version's document row was written again")
	}
	if ends := keysWith(t, s, pEnd); len(ends) != 1 || !bytes.Equal(ends[0], endKey(0)) || s.ends != 1 {
		t.Fatalf("end table %q (%d counted), want version 0's end", ends, s.ends)
	}
	terms, times := []string{"war", "sea"}, []int64{h, 3 * h}
	pending := answersOf(t, s, terms, times)
	if st := pending.stats[3*h]; st != (DocStats{2, 200}) {
		t.Errorf("doc stats at 3h: %+v, want b and a's new version", st)
	}
	if l := pending.lists["sea@"+fmt.Sprint(3*h)]; len(l) != 0 {
		t.Errorf("sea at 3h: %+v, want none (a's first version ended)", l)
	}
	if l := pending.lists["sea@"+fmt.Sprint(h)]; len(l) != 1 || l[0].To != 2*h {
		t.Errorf("sea at 1h: %+v, want a's first version ending at 2h", l)
	}
	// Counted again at open.
	must(t, s.Close())
	s = openTestStore(t, dir)
	if s.ends != 1 || !answersOf(t, s, terms, times).equal(pending) {
		t.Fatalf("reopened: %d ends, answers differ", s.ends)
	}
	// A fold.
	n, err := s.foldEnds()
	must(t, err)
	s.ends -= n
	if n != 1 || len(keysWith(t, s, pEnd)) != 0 {
		t.Fatalf("fold removed %d ends, %d left", n, len(keysWith(t, s, pEnd)))
	}
	if r, _ := s.db.Get(numKey(0), nil); bytes.Equal(r, rowA) {
		t.Error("fold: the row still lacks its end")
	}
	if got := answersOf(t, s, terms, times); !got.equal(pending) {
		t.Fatalf("after the fold: %+v, want %+v", got, pending)
	}
	// b's end pending, then its row changes (a new frequency): the row
	// is written with the end, which leaves the end table.
	must(t, s.Put(ctx, []Posting{post("war", b, 0, 2*h, 2)}))
	if len(keysWith(t, s, pEnd)) != 1 {
		t.Fatal("b's end not pending")
	}
	must(t, s.Put(ctx, []Posting{post("war", b, 0, Open, 5)}))
	if ends := keysWith(t, s, pEnd); len(ends) != 0 || s.ends != 0 {
		t.Errorf("b's row written again: end table %q (%d counted), want empty", ends, s.ends)
	}
	l, err := s.Postings(ctx, PostingQuery{Term: "war", At: h})
	must(t, err)
	for _, p := range l.Postings {
		if p.URL == b && (p.To != 2*h || p.TF != 5) {
			t.Errorf("b: %+v, want tf 5 ending at 2h", p)
		}
	}
}

// TestStoreFoldsAtBound: Puts fold the pending ends once they reach
// foldAt, and not before.
func TestStoreFoldsAtBound(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "s"))
	defer s.Close()
	s.foldMin = 5
	var ps []Posting
	for i := range 20 {
		ps = append(ps, post("war", fmt.Sprintf("http://a.example/%d", i), 10, Open, 1))
	}
	must(t, s.Put(ctx, ps))
	for i := range 4 {
		must(t, s.Put(ctx, []Posting{post("war", fmt.Sprintf("http://a.example/%d", i), 10, 20, 1)}))
		if s.ends != int64(i+1) || len(keysWith(t, s, pEnd)) != i+1 {
			t.Fatalf("after %d ends: %d pending", i+1, s.ends)
		}
	}
	must(t, s.Put(ctx, []Posting{post("war", "http://a.example/4", 10, 20, 1)}))
	if s.ends != 0 || len(keysWith(t, s, pEnd)) != 0 {
		t.Fatalf("at the bound: %d pending, want a fold", s.ends)
	}
	l, err := s.Postings(ctx, PostingQuery{Term: "war", At: 25})
	must(t, err)
	if l.DF != 15 {
		t.Errorf("df at 25: %d, want 15", l.DF)
	}
}

// TestStoreFormat4: a store of format 4 (identities v key from) opens
// as format 5, its identities moved, answers as before, and a write
// that ends one of its versions finds it (no version is numbered
// twice).
func TestStoreFormat4(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s := openTestStore(t, dir)
	h := int64(docStatsGrain)
	var ps []Posting
	var rows []DocRow
	for i := range 2*maxBlock + 30 {
		u := fmt.Sprintf("http://a.example/%d", i)
		to := Open
		if i%3 == 0 {
			to = int64(i+2) * h
		}
		ps = append(ps, post("war", u, int64(i)*h, to, 1+uint32(i%3)))
		if i%2 == 0 {
			ps = append(ps, post("peace", u, int64(i)*h, to, 2))
		}
		rows = append(rows, DocRow{Key: id.OfString(u), URL: u, From: int64(i) * h, To: to, DocLen: 100})
	}
	must(t, s.Put(ctx, ps))
	must(t, s.PutDocs(ctx, rows))
	// Some ends pending, to be folded when it is made format 4.
	must(t, s.Put(ctx, []Posting{post("war", "http://a.example/1", h, 5*h, 2)}))
	terms, times := []string{"war", "peace"}, []int64{0, 3 * h, 50 * h, 1000 * h}
	before := answersOf(t, s, terms, times)
	var b leveldb.Batch
	oldIdents(t, s, &b, true)
	b.Put(formatKey, []byte{4})
	must(t, s.db.Write(&b, nil))
	must(t, s.Close())

	s = openTestStore(t, dir)
	defer func() { s.Close() }()
	if f, err := s.db.Get(formatKey, nil); err != nil || f[0] != storeFormat {
		t.Fatalf("format %v %v, want %d", f, err, storeFormat)
	}
	if old := keysWith(t, s, pVersion4); len(old) != 0 {
		t.Errorf("%d format-4 identities left", len(old))
	}
	for _, k := range keysWith(t, s, pTail) {
		if len(k) < 7 || k[len(k)-5] != 0 {
			t.Errorf("a whole tail left: %q", k)
		}
	}
	if got := answersOf(t, s, terms, times); !got.equal(before) {
		t.Fatalf("after the move: %+v, want %+v", got, before)
	}
	next := s.next
	must(t, s.Put(ctx, []Posting{post("war", "http://a.example/2", 2*h, 3*h, 3)}))
	if s.next != next {
		t.Errorf("ending a moved version numbered a new one")
	}
	l, err := s.Postings(ctx, PostingQuery{Term: "war", At: 2*h + 1, Keys: []id.ID{id.OfString("http://a.example/2")}})
	must(t, err)
	if len(l.Postings) != 1 || l.Postings[0].To != 3*h || l.Postings[0].TF != 3 {
		t.Errorf("a/2 at 2h: %+v", l.Postings)
	}
	checkSums(t, s)
}
