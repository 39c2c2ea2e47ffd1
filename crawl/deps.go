package crawl

import (
	"context"
	"errors"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/id"
)

// Deps are the parties a Crawler works with besides the origins: the
// archive it stores into and the router that delivers links to their
// owners. Archive and Forwarder are required (New fails without them);
// every other field may be nil, which switches off exactly the feature its
// comment names, and nothing else: the crawler never looks for a method
// its Deps do not name. (Config names three more optional parties:
// Robots, Redirects and Copies.)
type Deps struct {
	// Archive stores captures and crawl states. Required.
	Archive Archive
	// Forwarder delivers extracted links to their owners. Required.
	Forwarder Forwarder

	// Touch records a 304 answer as a revisit for exports. Nil: an
	// unchanged page updates only its crawl state.
	Touch Toucher
	// Versions derives a crawl state from a URL's newest stored version
	// when it has none of its own (a range taken over). Nil: such a URL's
	// first fetch is unconditional.
	Versions VersionStater
	// Lister lists the archive's URLs: each new day, and each take-over,
	// queues the listed URLs this node owns besides the known ones. Nil:
	// only known URLs are queued.
	Lister URLLister
	// Sharer hands the known URLs that no stored version carries (Haver
	// tells which) to the holders of their ranges each new day. A Sharer
	// needs a Haver; a Haver alone is unused. Nil Sharer: they are not
	// shared.
	Haver  VersionHaver
	Sharer KnownSharer
	// Relocator re-checks ownership just before each fetch and passes on
	// an entry whose range moved. Nil: every queued entry is fetched.
	Relocator Relocator
	// Requisites delivers page requisites apart from other links, to the
	// owners' AddRequisites. Nil: requisites go through Forwarder, and
	// the owners' Add refuses the dynamic ones.
	Requisites RequisiteForwarder
	// Fetched is told each fetch that is about to store a version (before
	// Put) or confirmed the newest one (a 304, an unchanged payload): the
	// URL, the status and the payload's digest. The node releases the
	// handed-off records it holds with that payload (node/replication,
	// Replicator.Confirm). Nil: nobody is told.
	Fetched func(ctx context.Context, url string, status int, digest id.ID)
	// Browser is offered each changed page before it is stored, and
	// renders those it chooses (browser.go). Nil: every page is stored
	// as fetched.
	Browser Browser
}

// WithStore returns d with s as its Archive and s's optional archive
// parts (Touch, Versions, Lister, Haver): what a node's store offers.
func (d Deps) WithStore(s *archive.Store) Deps {
	d.Archive, d.Touch, d.Versions, d.Lister, d.Haver = s, s, s, s, s
	return d
}

// check reports a Deps New cannot work with.
func (d Deps) check() error {
	switch {
	case d.Archive == nil || d.Forwarder == nil:
		return errors.New("crawl: Deps needs an Archive and a Forwarder")
	case d.Sharer != nil && d.Haver == nil:
		return errors.New("crawl: Deps.Sharer needs a Deps.Haver")
	}
	return nil
}

// fetched tells Deps.Fetched, if set, of a fetch of url.
func (d Deps) fetched(ctx context.Context, url string, status int, digest id.ID) {
	if d.Fetched != nil && !digest.IsZero() {
		d.Fetched(ctx, url, status, digest)
	}
}
