package archive

import (
	"errors"
	"net/http"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrNotFound reports that the archive holds no matching version or state.
	ErrNotFound = errors.New("archive: not found")
	// ErrCorrupt reports a file whose bytes do not match its recorded digests.
	ErrCorrupt = errors.New("archive: corrupt")
	// ErrQuota reports that the disk quota is reached: the capture was not stored.
	ErrQuota = errors.New("archive: quota reached")
	// ErrTooMany reports a listing stopped at its bound (Store.EntriesUpTo).
	ErrTooMany = errors.New("archive: too many entries")
	// ErrBadCapture reports a capture Put cannot store faithfully (a URL
	// with whitespace, a time out of range, a payload too large): trying
	// again cannot help, unlike other Put errors.
	ErrBadCapture = errors.New("archive: capture cannot be stored")
)

// Capture is one HTTP response as fetched from its origin server.
type Capture struct {
	URL    string      // canonical URL (see internal/canon)
	Time   time.Time   // when the response was received
	Status int         // HTTP status code
	Header http.Header // response headers as received
	Body   []byte      // payload, after transfer decoding
	// Digest, if not zero, is the SHA-1 of Body as the caller computed it
	// (the crawler hashes every body to compare it with the last
	// version): Put then does not hash Body again. It must be right: it
	// names the version's file and is its WARC-Payload-Digest, and every
	// read of the file checks it against the payload (ErrCorrupt).
	Digest id.ID
	// Truncated, when not empty, is the WARC-Truncated reason of a record
	// whose payload is not the whole body the server sent: "length" for a
	// body over the crawler's size limit, "unspecified" for a type the
	// operator does not keep. Such a record keeps the status and headers
	// as the archive's record of the URL that day; its payload is empty.
	Truncated string
	// State, if set, is recorded as the crawl state of URL, as SetState
	// would: by the same index write as the new version (a crash keeps
	// both or neither), or on its own when Put adds no version. It is not
	// recorded when Put fails.
	State *CrawlState
	// Peer and Signature are the version's provenance: the libp2p peer id
	// of the node that fetched it and its signature of SignedMessage. Put
	// sets them with Options.Signer when Peer is empty; a decoded record
	// carries those it was stored with (provenance.go).
	Peer      string
	Signature []byte
	// Browser marks a response captured in a browser while it rendered
	// a page (HeaderBrowser), not fetched on its own.
	Browser bool
	// Resource makes the record a WARC "resource" record rather than a
	// "response": content the archive made rather than an HTTP answer
	// (a page's screenshot, ScreenshotCapture). Its block is Body alone,
	// with no HTTP status line or headers; Status must be 200 and Header
	// holds only its Content-Type, which the record carries as its own
	// Content-Type field. A decoded resource record reads back the same
	// way, so replay and the index treat it as a 200 answer of that type.
	Resource bool
	// Request, when set, is the HTTP request head sent for this response,
	// as written: request line, header fields, empty line (request.go;
	// at most MaxRequestHead bytes, else Put leaves it out).
	Request []byte
	// Imported, when set, marks a response read from another tool's
	// file, not fetched: Peer imported it (imported.go).
	Imported *Import
}

// Version describes one stored capture: what the index knows without
// reading its record.
type Version struct {
	URL         string    `json:"url"`
	Key         id.ID     `json:"key"`    // SHA-1 of URL: the ring key
	Digest      id.ID     `json:"digest"` // SHA-1 of the payload
	Day         int64     `json:"day"`    // Time in days since the epoch (of the store's day length)
	Time        time.Time `json:"time"`
	Status      int       `json:"status"`
	ContentType string    `json:"type,omitempty"`
	Length      int64     `json:"length"` // payload bytes
	// Seq tells apart versions of one URL with the same payload on the
	// same day (A, B, A): 0 for the first, then 1, 2... (Entry.Seq).
	Seq int `json:"seq,omitempty"`
	// Peer is the libp2p peer id that fetched and signed the version ("" if
	// unsigned).
	Peer string `json:"peer"`
	// File, Offset and Size locate the version's record: Size bytes at
	// Offset in the segment File (a path relative to the store root, e.g.
	// "segments/00000001.warc.gz"), one gzip member.
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	// Browser is the record's Capture.Browser: captured in a browser
	// while it rendered a page, not fetched on its own.
	Browser bool `json:"browser,omitempty"`
	// Imported, when set, says the version was imported from another
	// tool's file by Peer, not fetched (imported.go).
	Imported *Import `json:"imported,omitempty"`
}

// Entry returns the version's replication name (see Entry).
func (v Version) Entry() Entry {
	return Entry{Key: v.Key, Digest: v.Digest, Day: v.Day, Seq: v.Seq}
}

// CrawlState is what the crawler remembers about a URL between visits.
type CrawlState struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	// Status is the HTTP status of the last answer (0 in states written
	// before it was recorded: read it as 200). With Digest it tells an
	// unchanged answer from a changed one: a page that turns into a 404
	// with the same body has changed.
	Status   int       `json:"status,omitempty"`
	Digest   id.ID     `json:"digest"`             // payload digest of the newest version
	Outlinks []string  `json:"outlinks,omitempty"` // canonical links of the newest version, sorted
	Checked  time.Time `json:"checked"`            // last fetch attempt that got an answer; the crawler leaves it at a 304 it records with Touch (Checks, CheckedOn)
	// Versioned is set by Store.State and never stored: nonzero when the
	// state was written with a version of the URL (by Put), a token that
	// lets TouchState record a check without looking the version up
	// again unless the store purged versions since the read (a token of
	// another store, or of an earlier opening of it, counts as none). Zero for a
	// state SetState wrote, one derived from a version
	// (StateFromVersion), or one not read from a store.
	Versioned uint64 `json:"-"`
}

// LastStatus returns the HTTP status of the last answer, 200 when the state
// predates the Status field.
func (st CrawlState) LastStatus() int {
	if st.Status == 0 {
		return 200
	}
	return st.Status
}
