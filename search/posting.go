package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/binread"
	"github.com/herod-archive/herod/internal/id"
)

// Open is the To of a posting whose version is still the newest.
const Open int64 = 0

// maxURLLen bounds the URL a posting carries.
const maxURLLen = 8 << 10

// Posting says that one version of one URL holds one term. A version is
// live from its capture time From (inclusive) to the capture time To of
// the URL's next version (exclusive; Open while it is the newest), both
// in Unix milliseconds: a query as of D sees the postings live at D.
// A posting's identity is (Term, Key, From); the same posting sent twice
// is stored once, and a posting that arrives with a To ends the open one.
type Posting struct {
	Term    string
	Key     id.ID  // SHA-1 of the canonical URL: the URL's ring key
	URL     string // canonical URL
	From    int64  // capture time of the version, Unix ms
	To      int64  // capture time of the next version, Unix ms; Open if none
	TF      uint32 // occurrences in title and text
	TitleTF uint32 // occurrences in the title
	DocLen  uint32 // tokens in title and text
}

// Live reports whether the posting's version is the URL's live version at
// Unix ms at.
func (p Posting) Live(at int64) bool {
	return p.From <= at && (p.To == Open || at < p.To)
}

// TermKey returns the ring key of a term: the SHA-1 of its bytes. Its
// postings live at the owner of this key and that owner's successors.
func TermKey(term string) id.ID { return id.OfString(term) }

// Millis converts a time to a posting's time unit.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// ErrBadPosting reports a posting that cannot be stored or decoded.
var ErrBadPosting = errors.New("search: bad posting")

// Check reports a posting a store must refuse (ErrBadPosting).
func (p Posting) Check() error {
	switch {
	case p.Term == "" || len(p.Term) > MaxTermLen:
		return fmt.Errorf("%w: term of %d bytes", ErrBadPosting, len(p.Term))
	case strings.IndexByte(p.Term, 0) >= 0:
		return fmt.Errorf("%w: term with a NUL byte", ErrBadPosting)
	case p.URL == "" || len(p.URL) > maxURLLen:
		return fmt.Errorf("%w: url of %d bytes", ErrBadPosting, len(p.URL))
	case p.To != Open && p.To < p.From:
		return fmt.Errorf("%w: ends before it starts", ErrBadPosting)
	case p.TF == 0 || p.TitleTF > p.TF || p.DocLen < p.TF:
		return fmt.Errorf("%w: counts tf %d title %d length %d", ErrBadPosting, p.TF, p.TitleTF, p.DocLen)
	}
	return nil
}

// AppendBinary appends one posting on its own: the term and URL
// length-prefixed, the key, then varints. A set of postings travels in
// the compact form of AppendPostingSet.
func (p Posting) AppendBinary(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p.Term)))
	b = append(b, p.Term...)
	b = append(b, p.Key[:]...)
	b = binary.AppendUvarint(b, uint64(len(p.URL)))
	b = append(b, p.URL...)
	b = binary.AppendVarint(b, p.From)
	b = binary.AppendVarint(b, p.To)
	b = binary.AppendUvarint(b, uint64(p.TF))
	b = binary.AppendUvarint(b, uint64(p.TitleTF))
	b = binary.AppendUvarint(b, uint64(p.DocLen))
	return b
}

// DecodePosting reads one posting from the front of b and returns the
// rest. It refuses a posting that Check refuses.
func DecodePosting(b []byte) (Posting, []byte, error) {
	var p Posting
	r := binread.New(b)
	p.Term = string(r.Bytes(MaxTermLen))
	r.Copy(p.Key[:])
	p.URL = string(r.Bytes(maxURLLen))
	p.From = r.Varint()
	p.To = r.Varint()
	p.TF = r.Uint32()
	p.TitleTF = r.Uint32()
	p.DocLen = r.Uint32()
	if r.Err() != nil {
		return Posting{}, nil, fmt.Errorf("%w: %v", ErrBadPosting, r.Err())
	}
	if err := p.Check(); err != nil {
		return Posting{}, nil, err
	}
	return p, r.Rest(), nil
}

// VersionPostings returns the postings of one version of url captured at
// from (Unix ms) and live until to: one per distinct term of its title and
// text.
func VersionPostings(url string, key id.ID, from, to int64, d Doc) []Posting {
	tfs, docLen := docTerms(d.Title, d.Text)
	out := make([]Posting, len(tfs))
	for i, t := range tfs {
		out[i] = Posting{Term: t.term, Key: key, URL: url, From: from, To: to, TF: t.tf, TitleTF: t.titleTF, DocLen: docLen}
	}
	return out
}
