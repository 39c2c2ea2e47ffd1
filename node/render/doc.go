// Package render is the browser-capture role of a node (issue 41): it
// chooses the pages worth rendering among those the crawler fetched,
// renders them in headless Chromium (package capture) on a node that
// volunteers the role, or has a ring member with the role render them,
// and routes every record of a render to its URL's owner.
//
// Which pages (Chooser): HTML pages only; those a rule's SURT prefix
// names (Rules, data the operator gives); those of a host whose first
// rendered page needed a browser (Verdicts, kept per host in the data
// directory); the first page of a host without a verdict (rendered to
// learn it: Needs); and script-heavy pages (Weight.ScriptHeavy: little
// visible text, or text small beside the inline script).
//
// Who renders. A node with the role (Config.Capturer) renders its own
// pages and serves RenderProtocol, at most Config.Concurrency browsers
// at once and within Config.CPUShare of the machine's CPUs (Pacer). A
// node without it asks a member with it: the members its ring routing
// state names whose libp2p identify lists RenderProtocol (the role is
// announced by serving the protocol). With no such member, or when the
// render fails, the page is stored as fetched.
//
// Where the records go. The renderer stores every record of the render
// in its own archive (signed by it, marked as captured in a browser),
// then sends each record whose URL another member owns to that owner
// over DeliverProtocol, grouped by owner, the owners in parallel; the
// owner imports it as it imports a replica's record, after checking that
// the sender has the role, signed the record itself, marked it as
// captured in a browser, captured it within MaxAge, and that the URL is
// the receiver's. The requesting node is the page's owner, so its page
// arrives that way too; the render's reply carries the rendered links,
// which its crawler forwards as any links.
//
// One render per answer: a page offered again with the answer (URL,
// status, body digest) of a render in flight, or of one done within
// RecentRender whose page the archive holds, is served by that render.
//
// Concurrency: a Service is safe for concurrent use.
package render
