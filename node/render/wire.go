package render

import (
	"errors"

	"github.com/libp2p/go-libp2p/core/protocol"
)

// Protocols. A node with the role serves RenderProtocol; every node
// serves DeliverProtocol. Members learn who has the role from libp2p's
// identify exchange, which lists the protocols a peer serves.
const (
	// RenderProtocol asks a member with the role to render one page:
	// a renderRequest frame, answered by a renderReply frame once the
	// page's records reached their owners.
	RenderProtocol protocol.ID = "/herod/render/1.0.0"
	// DeliverProtocol carries a render's records to the owner of their
	// URLs: a deliverHeader frame, then per record a frame with its name
	// and a frame with its bytes (one gzip member, as archive.ReadFile
	// gives it); answered by a deliverReply frame.
	DeliverProtocol protocol.ID = "/herod/rendered/1.0.0"
)

// Bounds of the protocols.
const (
	maxRequest    = 8 << 10   // a renderRequest
	maxReply      = 8 << 20   // a renderReply: links and loaded URLs
	maxLinkLen    = 2048      // a link in a reply longer than this is dropped
	maxFetched    = 1000      // fetched URLs in a reply
	maxReplyLinks = 2000      // links in a reply (capture.Config.MaxLinks)
	maxName       = 1 << 10   // a record's name
	maxRecords    = 500       // records in a delivery (capture.Config.MaxRequests)
	recordSlack   = 256 << 10 // a record's WARC and HTTP heads beyond its body
	maxRefusals   = 16        // reasons listed in a deliverReply
)

// ErrRole marks a delivery from a member without the role, or of
// records it may not deliver.
var ErrRole = errors.New("render: outside the sender's role")

// renderRequest asks for a render of URL, a canonical http(s) URL.
type renderRequest struct {
	URL string `json:"url"`
}

// renderReply is what a render did.
type renderReply struct {
	// Err is why the page was not rendered ("" if it was).
	Err string `json:"err,omitempty"`
	// Page reports that the page's document reached its owner.
	Page bool `json:"page"`
	// Links are the rendered page's links (capture.Result.Links).
	Links []string `json:"links,omitempty"`
	// Fetched are the URLs the page's scripts fetched (Fetched).
	Fetched []string `json:"fetched,omitempty"`
	// Records were stored by the renderer; Delivered reached their
	// owners (or the renderer owns them); Failed did not.
	Records   int `json:"records"`
	Delivered int `json:"delivered"`
	Failed    int `json:"failed"`
	// Held were answers equal to versions another member fetched, which
	// this node holds as a replica: not stored again, not delivered.
	Held   int      `json:"held"`
	Capped []string `json:"capped,omitempty"`
}

// deliverHeader opens a delivery.
type deliverHeader struct {
	Records int `json:"records"`
}

// deliverReply answers a delivery: the names of the records stored (or
// held already), and why the others were refused.
type deliverReply struct {
	Stored  []string `json:"stored"`
	Refused []string `json:"refused,omitempty"`
}
