package archive

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/herod-archive/herod/internal/id"
)

// Attested fields. Some of herod's own WARC fields say how a capture came
// to be rather than what the site sent: that a browser captured it
// (HeaderBrowser), that it was imported (HeaderImportedFrom…), the
// request that was sent for it (HeaderRequest). A holder that could add or strip them
// would change what readers are told about a capture, so the signature
// covers them: a capture that carries any is signed in the attested form,
// whose message (SignedAttestedMessage) adds the SHA-1 of the fields
// (attestedDigest) to the block-signing form's. Its signature field is
// the byte sigAttested, the block digest, the attested digest (20 bytes
// each) and the signer's signature.
//
// A capture without attested fields is signed as before (the block form),
// and a record that carries attested fields under a signature of another
// form is refused on import and by VerifyRecord: the fields were not
// signed.
//
// attestedHeaders is the one list of such fields: each kind of field has
// its own function returning its fields from the Capture, and a parser
// (parseProvenance) that reads them back into it, so the digest is always
// computed from the fields as the decoded capture holds them.

// sigAttested starts a signature field of the attested form.
const sigAttested = 3

// attestedHeaders returns c's attested WARC fields, sorted by name; none
// for a plain fetch.
func attestedHeaders(c *Capture) []warcHeader {
	hs := append(append(browserHeaders(c), importHeaders(c)...), requestHeaders(c)...) // imported.go, request.go
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].name < hs[j].name })
	return hs
}

// attestedDigest returns the SHA-1 of fields, each written "name: value"
// on a line of its own, in order; the zero ID when there are none.
func attestedDigest(fields []warcHeader) id.ID {
	if len(fields) == 0 {
		return id.ID{}
	}
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f.name)
		b.WriteString(": ")
		b.WriteString(f.value)
		b.WriteByte('\n')
	}
	return id.OfString(b.String())
}

// SignedAttestedMessage is what the signature of a capture with attested
// fields covers: SignedBlockMessage's fields under its own tag, and the
// digest of the attested fields.
func SignedAttestedMessage(url string, t time.Time, digest, block, attested id.ID) []byte {
	return []byte("herod-capture-v3\n" + url + "\n" + formatWarcDate(t) + "\n" + digest.String() + "\n" + block.String() + "\n" + attested.String())
}

// splitAttested returns the block and attested digests and the signer's
// bytes of a signature field of the attested form, ok false otherwise.
func splitAttested(sig []byte) (block, attested id.ID, raw []byte, ok bool) {
	if len(sig) <= 1+2*id.Size || sig[0] != sigAttested {
		return id.ID{}, id.ID{}, nil, false
	}
	return id.ID(sig[1 : 1+id.Size]), id.ID(sig[1+id.Size : 1+2*id.Size]), sig[1+2*id.Size:], true
}

// checkAttested is Import's check that the signature field sig covers
// exactly the attested fields of c, the capture decoded from the record.
func checkAttested(c *Capture, sig []byte) error {
	fields := attestedHeaders(c)
	_, signed, _, ok := splitAttested(sig)
	switch {
	case ok && signed != attestedDigest(fields):
		return fmt.Errorf("%w: %w: signed for other attested fields (%s, the record's %s)", ErrCorrupt, ErrUnsigned, signed.Short(), attestedDigest(fields).Short())
	case !ok && len(fields) > 0:
		return fmt.Errorf("%w: %w: %s not covered by the signature", ErrCorrupt, ErrUnsigned, fields[0].name)
	}
	return nil
}

// checkListedAttested is VerifySigned's check of a listed version's
// marks (Version.Browser, Version.Imported): a version listed with a mark
// must be signed in the attested form, so a listing cannot pass a fetch
// signed in another form off as a browser capture or an import. The
// attested digest itself cannot be checked from a listing: it covers the
// request head too (HeaderRequest), which a listing does not carry; the
// record is checked whole when it is read (VerifyRecord).
func checkListedAttested(v Version, sig []byte) error {
	if !v.Browser && v.Imported == nil {
		return nil
	}
	if _, _, _, ok := splitAttested(sig); !ok {
		return fmt.Errorf("listed: %w: %w: marked (browser %v, imported %v), not signed as such", ErrCorrupt, ErrUnsigned, v.Browser, v.Imported != nil)
	}
	return nil
}
