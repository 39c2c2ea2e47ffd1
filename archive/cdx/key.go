package cdx

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/id"
)

// CDX order and paging: the CDX API sorts captures by SURT, then capture
// time, then URL and payload digest (so the order is total), and pages
// through them with a resume key, the Key of the last capture a page
// consumed.

// ErrKey reports a resume key this package did not print.
var ErrKey = errors.New("cdx: malformed resumeKey")

// maxKeyLen bounds a resume key, escaped: two URLs' worth.
const maxKeyLen = 2 * (canon.MaxLen + 128)

// Key is a capture's position in CDX order.
type Key struct {
	SURT   string
	Time   time.Time
	URL    string
	Digest id.ID
}

// KeyOf returns the CDX key of v.
func KeyOf(v archive.Version) Key {
	return Key{SURT: archive.Surt(v.URL), Time: v.Time, URL: v.URL, Digest: v.Digest}
}

// Compare orders keys in CDX order.
func (k Key) Compare(o Key) int {
	return cmp.Or(strings.Compare(k.SURT, o.SURT), k.Time.Compare(o.Time), strings.Compare(k.URL, o.URL), k.Digest.Cmp(o.Digest))
}

// String is the key's resume-key text: SURT, RFC 3339 time, URL and
// digest (hex), space-separated and then query-escaped, so that it can be
// pasted into a query string as printed (the Wayback CDX server's habit).
func (k Key) String() string {
	return url.QueryEscape(k.SURT + " " + k.Time.UTC().Format(time.RFC3339Nano) + " " + k.URL + " " + k.Digest.String())
}

// ParseKey reads a resume key, escaped as String prints it or unescaped
// once by the query string. Errors wrap ErrKey.
func ParseKey(s string) (Key, error) {
	if len(s) > maxKeyLen {
		return Key{}, fmt.Errorf("%w of %d bytes", ErrKey, len(s))
	}
	if !strings.Contains(s, " ") {
		if u, err := url.QueryUnescape(s); err == nil {
			s = u
		}
	}
	parts := strings.Split(s, " ")
	if len(parts) != 4 {
		return Key{}, fmt.Errorf("%w: %.80q is not one this server printed", ErrKey, s)
	}
	t, err1 := time.Parse(time.RFC3339Nano, parts[1])
	d, err2 := id.Parse(parts[3])
	if err := errors.Join(err1, err2); err != nil {
		return Key{}, fmt.Errorf("%w: %v", ErrKey, err)
	}
	return Key{SURT: parts[0], Time: t.UTC(), URL: parts[2], Digest: d}, nil
}

// Row is one capture as the CDX API lists it.
type Row struct {
	archive.Version
	// Peer is the libp2p peer id of the node that fetched the version,
	// filled in only when PageRequest.Peers asks for it.
	Peer string `json:"peer,omitempty"`
	// Witnesses are the statements of holders other than the fetcher
	// that vouch for the version's date (archive.WitnessRule.Date),
	// earliest first, filled in with Peer by pagers that date versions.
	Witnesses []archive.Witness `json:"witnesses,omitempty"`
	// Rank is the URL's PageRank from the newest ring-wide run at or
	// before the capture's day (node/rank), filled in only when a CDX
	// request asks for the field; 0 when no run ranked it.
	Rank float64 `json:"rank,omitempty"`
}

// PageRequest asks for one page of captures in CDX order.
type PageRequest struct {
	Query   Query // the selection; its Limit is ignored
	After   *Key  // start strictly after this key (Reverse: strictly before); nil: at the start (end)
	Reverse bool  // descending CDX order
	N       int   // most rows to return, > 0
	Peers   bool  // fill in Row.Peer and Row.Witnesses
}
