package links

import (
	"errors"
	"fmt"
	"time"

	"github.com/herod-archive/herod/internal/canon"
)

// Record is one link as the index keeps it: Source carried a link to
// Target, with Anchor as its text, from the capture at From until the
// first later capture of Source that lacks it (Until; zero while the
// newest capture still carries it). Seen is the capture time of the
// newest version of Source the record reflects: of two copies of one
// record (same Target, Source and From), the later Seen wins.
type Record struct {
	Target string    `json:"t"`
	Source string    `json:"s"`
	Anchor string    `json:"a,omitempty"`
	From   time.Time `json:"from"`
	Until  time.Time `json:"until,omitzero"`
	Seen   time.Time `json:"seen"`
}

// errRecord marks a record that does not hold together.
var errRecord = errors.New("links: bad record")

// Check reports whether r holds together: both URLs canonical, the
// anchor normalized and bounded, From ≤ Seen, and Until (if set) after
// From and not after Seen.
func (r Record) Check() error {
	for _, u := range []string{r.Target, r.Source} {
		if c, err := canon.Canonical(u); err != nil || c != u {
			return fmt.Errorf("%w: url %.80q is not canonical", errRecord, u)
		}
	}
	switch {
	case r.Anchor != NormalizeAnchor(r.Anchor):
		return fmt.Errorf("%w: anchor not normalized", errRecord)
	case r.From.IsZero() || r.Seen.Before(r.From):
		return fmt.Errorf("%w: seen before from", errRecord)
	case !r.Until.IsZero() && (!r.Until.After(r.From) || r.Until.After(r.Seen)):
		return fmt.Errorf("%w: until out of order", errRecord)
	}
	return nil
}

// LiveAt reports whether the source carried the link at t: From ≤ t and
// t before Until. A zero t means at any time.
func (r Record) LiveAt(t time.Time) bool {
	if t.IsZero() {
		return true
	}
	return !t.Before(r.From) && (r.Until.IsZero() || t.Before(r.Until))
}
