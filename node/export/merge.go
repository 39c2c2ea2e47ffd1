package export

import (
	"container/heap"
	"errors"
	"fmt"
	"io"

	"github.com/herod-archive/herod/archive"
)

// The merge: the members' replies, each in export order, become one
// stream in that order, without the replicas' duplicates.

// memberHeap orders the members' current records.
type memberHeap []*Member

func (h memberHeap) Len() int           { return len(h) }
func (h memberHeap) Less(i, j int) bool { return h[i].key.Compare(h[j].key) < 0 }
func (h memberHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *memberHeap) Push(x any)        { *h = append(*h, x.(*Member)) }
func (h *memberHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Merge writes the records of the members, each positioned on its
// first record or done, in global export order, dropping a record equal to
// the one just written (the same version held by two members). It calls
// progress, if non-nil, with each written record's cursor. A member's
// failure stops the merge with an error wrapping ErrPartial.
//
// When the members' query asks for the newest version of each URL only
// (Filter.Latest), each member sends its newest and Merge holds a URL's
// record back until the next URL comes: the last, the newest the ring
// holds, is written.
//
// Versions a member skipped as corrupt are reported once the merge is
// done, as an error wrapping ErrPartial: the stream is then complete but
// for them.
func Merge(all []*Member, w io.Writer, progress func(cursor string)) error {
	var h memberHeap
	latest := false
	for _, m := range all {
		latest = latest || m.q.Latest
		if !m.done {
			h = append(h, m)
		}
	}
	heap.Init(&h)
	var (
		last    archive.Cursor // the record written or held last
		held    bool           // Latest: a record is held, not yet written
		heldRec struct {
			body   []byte
			cursor string
		}
	)
	write := func(body []byte, cursor string) error {
		if _, err := w.Write(body); err != nil {
			return err
		}
		if progress != nil {
			progress(cursor)
		}
		return nil
	}
	wrote := false
	for h.Len() > 0 {
		m := h[0]
		if !wrote || m.key.Compare(last) != 0 {
			switch {
			case !latest:
				if err := write(m.body, m.head.Cursor); err != nil {
					return err
				}
			case held && m.key.URL != last.URL:
				if err := write(heldRec.body, heldRec.cursor); err != nil {
					return err
				}
				fallthrough
			default:
				heldRec.body, heldRec.cursor, held = m.body, m.head.Cursor, true
			}
			last, wrote = m.key, true
		}
		if err := m.next(); err != nil {
			return fmt.Errorf("%w: %w", ErrPartial, err)
		}
		if m.done {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
	}
	if held {
		if err := write(heldRec.body, heldRec.cursor); err != nil {
			return err
		}
	}
	var errs []error
	for _, m := range all {
		if m.skipped > 0 {
			errs = append(errs, fmt.Errorf("member %s left out %d corrupt version files", m.name, m.skipped))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrPartial, errors.Join(errs...))
	}
	return nil
}

// Dropped returns how many records the members dropped as failing
// verification, and the first reason.
func Dropped(all []*Member) (int, error) {
	n, first := 0, error(nil)
	for _, m := range all {
		d, err := m.Dropped()
		n += d
		if first == nil && err != nil {
			first = fmt.Errorf("member %s: %w", m.name, err)
		}
	}
	return n, first
}
