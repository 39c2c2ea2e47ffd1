package access

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Action is what a rule does to the captures it applies to.
type Action string

// Actions, from the least restrictive to the most.
const (
	Allow   Action = "allow"
	Block   Action = "block"
	Exclude Action = "exclude"
	Purge   Action = "purge"
)

// rank orders actions by restriction: a higher rank wins a tie.
func (a Action) rank() int {
	switch a {
	case Allow:
		return 0
	case Block:
		return 1
	case Exclude:
		return 2
	case Purge:
		return 3
	}
	return -1
}

// ErrInvalid reports a malformed rule.
var ErrInvalid = errors.New("access: invalid rule")

// Rule is one access rule. Exactly one of URL and SURT names what it
// covers: URL, a URL whose SURT key is the rule's key (the whole key
// with Exact, else a prefix of it); SURT, a SURT prefix used as given
// (lower-cased; "*" is every URL). Its JSON form is one line of a rules file.
type Rule struct {
	URL    string `json:"url,omitempty"`
	SURT   string `json:"surt,omitempty"`
	Exact  bool   `json:"exact,omitempty"`
	Action Action `json:"action"`
	// Status is the HTTP status a blocked capture is answered with: 451
	// (the default) or 403. Only for block.
	Status int `json:"status,omitempty"`
	// After and Before bound the capture dates the rule applies to:
	// After inclusive, Before exclusive; zero means no bound.
	After  time.Time `json:"after,omitzero"`
	Before time.Time `json:"before,omitzero"`
	// Embargo, when set, limits the rule to captures newer than it (at
	// the time of the decision).
	Embargo Period `json:"embargo,omitempty"`
	// Reason is shown to readers of a blocked capture; Date is when the
	// rule was decided (its "since").
	Reason string    `json:"reason,omitempty"`
	Date   time.Time `json:"date,omitzero"`
}

// Key returns the rule's SURT key (a prefix unless Exact).
func (r Rule) Key() (string, error) {
	switch {
	case r.URL != "" && r.SURT != "":
		return "", fmt.Errorf("%w: both url and surt", ErrInvalid)
	case r.SURT != "":
		if r.Exact {
			return "", fmt.Errorf("%w: exact needs a url, not a surt prefix", ErrInvalid)
		}
		if r.SURT == "*" {
			return "", nil
		}
		return strings.ToLower(r.SURT), nil
	case r.URL != "":
		k, err := SURT(r.URL)
		if err != nil {
			return "", fmt.Errorf("%w: url %q: %w", ErrInvalid, r.URL, err)
		}
		return k, nil
	}
	return "", fmt.Errorf("%w: no url or surt", ErrInvalid)
}

// Validate reports whether r is well formed.
func (r Rule) Validate() error {
	if _, err := r.Key(); err != nil {
		return err
	}
	if r.Action.rank() < 0 {
		return fmt.Errorf("%w: action %q (allow, block, exclude or purge)", ErrInvalid, r.Action)
	}
	if r.Status != 0 && (r.Action != Block || (r.Status != 451 && r.Status != 403)) {
		return fmt.Errorf("%w: status %d (451 or 403, block only)", ErrInvalid, r.Status)
	}
	if !r.After.IsZero() && !r.Before.IsZero() && !r.After.Before(r.Before) {
		return fmt.Errorf("%w: after %s is not before %s", ErrInvalid, r.After.Format(time.RFC3339), r.Before.Format(time.RFC3339))
	}
	if r.Embargo < 0 {
		return fmt.Errorf("%w: negative embargo", ErrInvalid)
	}
	if r.Action == Purge && r.Embargo > 0 {
		// An embargo hides captures for a while; a purge removes them.
		return fmt.Errorf("%w: a purge has no embargo (use before/after)", ErrInvalid)
	}
	if len(r.Reason) > 1024 {
		return fmt.Errorf("%w: reason over 1024 bytes", ErrInvalid)
	}
	return nil
}

// ID names what a rule covers: its key, exactness and date window. A
// rule added with the ID of a kept one replaces it.
func (r Rule) ID() string {
	k, _ := r.Key()
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%t\n%s\n%s\n%d", k, r.Exact, stamp(r.After), stamp(r.Before), int64(r.Embargo))
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// dated reports whether the rule has a date window.
func (r Rule) dated() bool { return !r.After.IsZero() || !r.Before.IsZero() || r.Embargo > 0 }

// holds reports whether capture time t lies in the rule's window at now.
func (r Rule) holds(t, now time.Time) bool {
	if !r.After.IsZero() && t.Before(r.After) {
		return false
	}
	if !r.Before.IsZero() && !t.Before(r.Before) {
		return false
	}
	return r.Embargo <= 0 || t.After(now.Add(-time.Duration(r.Embargo)))
}

// Period is a length of time: in JSON and flags "30d", "2w", "1y" (365
// days), or a Go duration ("36h").
type Period time.Duration

// ParsePeriod reads a Period.
func ParsePeriod(s string) (Period, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour, 'y': 365 * 24 * time.Hour}
	if u, ok := unit[s[len(s)-1]]; ok {
		n, err := strconv.Atoi(s[:len(s)-1])
		if err == nil && n >= 0 && n < 1000*365 {
			return Period(time.Duration(n) * u), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("access: period %q: want 30d, 2w, 1y or a duration", s)
	}
	return Period(d), nil
}

// String writes p in days when whole, else as a Go duration.
func (p Period) String() string {
	d := time.Duration(p)
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// MarshalJSON writes p as a string.
func (p Period) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON reads a string (ParsePeriod) or a number of seconds.
func (p *Period) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err := json.Unmarshal(b, &secs); err != nil {
			return fmt.Errorf("access: period %s: %w", b, err)
		}
		*p = Period(time.Duration(secs * float64(time.Second)))
		return nil
	}
	v, err := ParsePeriod(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}
