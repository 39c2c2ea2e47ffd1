package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/internal/id"
)

// Provenance. Every version a node fetches is signed by that node: the
// record carries the fetching peer (WARC-Herod-Peer, its libp2p peer id)
// and its signature (WARC-Herod-Signature, base64) over SignedBlockMessage
// of the URL, the capture time (the record's WARC-Date), the payload
// digest and the block digest: the block is the HTTP status line and
// headers followed by the payload, so the signature covers what replay
// serves of a capture, its status and headers (Content-Type, Location)
// as well as its bytes. The signature field is the byte sigBlock, the
// block digest (20 bytes) and the signer's signature. A store given a
// Verifier imports only records whose signature verifies against the
// record's own block digest, whose capture time is not in the future
// (beyond MaxClockSkew) and whose peer is not refused (Purge). The
// headers are part of the record, so they travel with it through
// replication and export.
//
// A capture that carries attested fields (attest.go: how the capture came
// to be, such as the browser marker) is signed in the attested form,
// which covers those fields too.
//
// Records signed before the block digest was (the field holds the
// signer's bytes alone, over SignedMessage, which names no block) are
// still accepted: for them the signature covers the payload, not the
// status and headers. A signature of either form verifies only as that
// form, so a block-signed record cannot be passed off as one of the
// older form with other headers.
//
// What a signature proves: that the named peer produced this record for
// this URL, time and payload, and that nobody changed a byte of it since.
// What it does not prove: that the site served those bytes at that time —
// the fetching peer can lie about what it saw. Witnesses (witness.go)
// vouch for the time.

// Provenance header names.
const (
	HeaderPeer      = "WARC-Herod-Peer"
	HeaderSignature = "WARC-Herod-Signature"
)

// MaxClockSkew is how far in the future an imported capture time may lie.
const MaxClockSkew = 5 * time.Minute

// Signer signs the versions a store's Put adds.
type Signer interface {
	// Peer names the signer: its libp2p peer id.
	Peer() string
	// Sign returns the signature of msg.
	Sign(msg []byte) ([]byte, error)
}

// Verifier checks a signature by a named peer.
type Verifier interface {
	// Verify returns nil when sig is peer's signature of msg.
	Verify(peer string, msg, sig []byte) error
}

// Errors of provenance checks on import. Import wraps each with
// ErrCorrupt too, so that a replica counts the record as rejected.
var (
	// ErrUnsigned reports a record without a valid signature.
	ErrUnsigned = errors.New("archive: record not signed by its fetcher")
	// ErrFuture reports a capture time beyond now plus MaxClockSkew.
	ErrFuture = errors.New("archive: capture time in the future")
	// ErrRefusedPeer reports a record signed by a purged peer.
	ErrRefusedPeer = errors.New("archive: signed by a refused peer")
)

// SignedMessage is what a version's signature of the older form covers:
// a domain tag, the URL, the capture time as its WARC-Date and the
// payload digest.
func SignedMessage(url string, t time.Time, digest id.ID) []byte {
	return []byte("herod-capture-v1\n" + url + "\n" + formatWarcDate(t) + "\n" + digest.String())
}

// SignedBlockMessage is what a version's signature covers: SignedMessage's
// fields under its own tag, and the record's block digest.
func SignedBlockMessage(url string, t time.Time, digest, block id.ID) []byte {
	return []byte("herod-capture-v2\n" + url + "\n" + formatWarcDate(t) + "\n" + digest.String() + "\n" + block.String())
}

// sigBlock starts a signature field that names the block digest it
// signs (SignedBlockMessage).
const sigBlock = 2

// splitSig returns the block digest and the signer's bytes of a signature
// field of the block-signing form, ok false for one of the older form.
func splitSig(sig []byte) (block id.ID, raw []byte, ok bool) {
	if len(sig) <= 1+id.Size || sig[0] != sigBlock {
		return id.ID{}, nil, false
	}
	return id.ID(sig[1 : 1+id.Size]), sig[1+id.Size:], true
}

// sign sets c's provenance with signer, unless it has one: its signature
// of SignedBlockMessage of c, its capture time t, its payload digest and
// its record's block digest.
func sign(signer Signer, c *Capture, t time.Time, digest, block id.ID) error {
	if signer == nil || c.Peer != "" {
		return nil
	}
	if fields := attestedHeaders(c); len(fields) > 0 {
		attested := attestedDigest(fields)
		sig, err := signer.Sign(SignedAttestedMessage(c.URL, t, digest, block, attested))
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		c.Peer = signer.Peer()
		c.Signature = append(append(append(make([]byte, 0, 1+2*id.Size+len(sig)), sigAttested), block[:]...), attested[:]...)
		c.Signature = append(c.Signature, sig...)
		return nil
	}
	sig, err := signer.Sign(SignedBlockMessage(c.URL, t, digest, block))
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	c.Peer = signer.Peer()
	c.Signature = append(append(make([]byte, 0, 1+id.Size+len(sig)), sigBlock), block[:]...)
	c.Signature = append(c.Signature, sig...)
	return nil
}

// provenanceHeaders returns the WARC fields of c's provenance, none when
// it has none.
func provenanceHeaders(c *Capture) []warcHeader {
	if c.Peer == "" {
		return nil
	}
	return []warcHeader{
		{HeaderPeer, c.Peer},
		{HeaderSignature, base64.StdEncoding.EncodeToString(c.Signature)},
	}
}

// parseProvenance reads a record's provenance fields into c, the
// browser marker (HeaderBrowser) included.
func parseProvenance(h interface{ Get(string) string }, c *Capture) error {
	parseBrowser(h, c)
	if err := parseImported(h, c); err != nil { // imported.go
		return err
	}
	if err := parseRequest(h, c); err != nil { // request.go
		return err
	}
	p, sig := h.Get(HeaderPeer), h.Get(HeaderSignature)
	if p == "" && sig == "" {
		return nil
	}
	if p == "" || sig == "" || len(p) > 128 || len(sig) > 512 {
		return malformed("provenance: peer %q, signature of %d bytes", p, len(sig))
	}
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return malformed("provenance: signature: %v", err)
	}
	c.Peer, c.Signature = p, b
	return nil
}

// checkProvenance is Import's check of a decoded record: a signature that
// verifies, of the record's own block digest if it names one, a peer not
// refused, a capture time not in the future.
func (s *Store) checkProvenance(f *decodedFile) error {
	c := &f.capture
	b, _, ok := splitSig(c.Signature)
	if ab, _, _, aok := splitAttested(c.Signature); aok {
		b, ok = ab, true
	}
	if ok && b != f.block && s.verifier != nil {
		return fmt.Errorf("%w: %w: signed for another status or headers (block %s, the record's %s)", ErrCorrupt, ErrUnsigned, b.Short(), f.block.Short())
	}
	if s.verifier != nil {
		if err := checkAttested(c, c.Signature); err != nil {
			return err
		}
	}
	return s.checkSigned(c.URL, c.Time, f.digest, c.Peer, c.Signature)
}

// checkSigned is checkProvenance on the signed fields of a version: sig
// of either form (see above).
func (s *Store) checkSigned(url string, t time.Time, digest id.ID, peer string, sig []byte) error {
	if t.After(s.now().Add(MaxClockSkew)) {
		return fmt.Errorf("%w: %w: %s", ErrCorrupt, ErrFuture, formatWarcDate(t))
	}
	if s.verifier == nil {
		return nil
	}
	if peer == "" {
		return fmt.Errorf("%w: %w: no %s", ErrCorrupt, ErrUnsigned, HeaderPeer)
	}
	if s.refused.has(peer) {
		return fmt.Errorf("%w: %w: %s", ErrCorrupt, ErrRefusedPeer, peer)
	}
	msg, raw := SignedMessage(url, t, digest), sig
	if block, r, ok := splitSig(sig); ok {
		msg, raw = SignedBlockMessage(url, t, digest, block), r
	} else if block, attested, r, ok := splitAttested(sig); ok {
		msg, raw = SignedAttestedMessage(url, t, digest, block, attested), r
	}
	err := s.verifier.Verify(peer, msg, raw)
	if err != nil && len(raw) != len(sig) {
		// An older form's signature whose first byte happens to be sigBlock.
		err = s.verifier.Verify(peer, SignedMessage(url, t, digest), sig)
	}
	if err != nil {
		return fmt.Errorf("%w: %w: %w", ErrCorrupt, ErrUnsigned, err)
	}
	return nil
}

// VerifyRecord checks data, a version's record received from a peer to be
// served or exported rather than stored, exactly as Import checks a
// record before storing it (less the name, which the caller matches
// against what it asked for): one gzip member holding one WARC response
// record whose digests hold, a capture time not in the future and, with
// Options.Verifier, its fetcher's signature by a peer the store does not
// refuse (a purged peer). It returns the decoded capture and its payload
// digest; every failure wraps ErrCorrupt (ErrUnsigned, ErrRefusedPeer,
// ErrFuture for provenance). It stores nothing.
func (s *Store) VerifyRecord(data []byte) (*Capture, id.ID, error) {
	f, err := decodeMember(data)
	if err == nil {
		err = s.checkProvenance(f)
	}
	if err != nil {
		return nil, id.ID{}, fmt.Errorf("archive verify: %w", err)
	}
	return &f.capture, f.digest, nil
}

// VerifySigned checks a version listed by a peer, without its record: its
// fields signed by v.Peer (URL, Time, Digest) against sig, as Import
// checks a record's provenance, and that its Key and Day follow from its
// URL and Time. Every failure wraps ErrCorrupt.
func (s *Store) VerifySigned(v Version, sig []byte) error {
	if v.Key != id.OfString(v.URL) || v.Day != s.DayOf(v.Time) {
		return fmt.Errorf("archive verify %.100q: %w: key or day does not follow from the URL and time", v.URL, ErrCorrupt)
	}
	if err := checkListedAttested(v, sig); err != nil { // attest.go
		return fmt.Errorf("archive verify %.100q: %w", v.URL, err)
	}
	if err := s.checkSigned(v.URL, v.Time, v.Digest, v.Peer, sig); err != nil {
		return fmt.Errorf("archive verify %.100q: %w", v.URL, err)
	}
	return nil
}

// Provenance returns the fetcher and signature of the stored version v,
// read from its record's WARC header alone (the payload of a .warc.gz
// record is not decompressed): what a listing of versions sends for the
// asking node to check (VerifySigned). It does not verify the record
// (Read does); a record that is not v's is ErrCorrupt.
func (s *Store) Provenance(ctx context.Context, v Version) (string, []byte, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, fmt.Errorf("archive provenance: %w", err)
	}
	ref, err := parseSegment(v.File)
	if err != nil {
		return "", nil, fmt.Errorf("archive provenance: %w", err)
	}
	data, zd, err := s.readRecord(ref.id, v.Offset, v.Size)
	if err != nil {
		return "", nil, fmt.Errorf("archive provenance: %w", err)
	}
	var br *bufio.Reader
	if zd == nil {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return "", nil, fmt.Errorf("archive provenance: %w: %w", ErrCorrupt, err)
		}
		br = bufio.NewReaderSize(zr, 4096)
	} else {
		plain, err := zd.dec.DecodeAll(data, nil)
		if err != nil {
			return "", nil, fmt.Errorf("archive provenance: %w: zstd: %w", ErrCorrupt, err)
		}
		br = bufio.NewReader(bytes.NewReader(plain))
	}
	line, err := readLine(br)
	if err == nil && line != "WARC/1.1" && line != "WARC/1.0" {
		err = malformed("bad version line %q", line)
	}
	if err != nil {
		return "", nil, fmt.Errorf("archive provenance: %w", err)
	}
	h, err := readFields(br)
	if err == nil && h.Get("Warc-Target-Uri") != v.URL {
		err = fmt.Errorf("%w: record holds %q", ErrCorrupt, h.Get("Warc-Target-Uri"))
	}
	var c Capture
	if err == nil {
		err = parseProvenance(h, &c)
	}
	if err != nil {
		return "", nil, fmt.Errorf("archive provenance: %w", err)
	}
	return c.Peer, c.Signature, nil
}

// refusedFile lists, one per line, the peers whose records a store no
// longer imports (Purge adds to it).
const refusedFile = "refused-peers"

// peerSet is the refused peers of a store, loaded at open.
type peerSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (p *peerSet) has(peer string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[peer]
}

func (p *peerSet) add(peer string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]bool{}
	}
	p.m[peer] = true
}

// loadRefused reads dir's refused-peers file; a missing file is an empty
// set.
func loadRefused(dir string) (map[string]bool, error) {
	m := map[string]bool{}
	f, err := os.Open(filepath.Join(dir, refusedFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			m[l] = true
		}
	}
	return m, sc.Err()
}

// addRefused appends peer to dir's refused-peers file, synced, and the
// file's creation with a sync of dir.
func addRefused(dir, peer string) error {
	m, err := loadRefused(dir)
	if err != nil {
		return err
	}
	if m[peer] {
		return nil
	}
	return appendSynced(dir, refusedFile, []byte(peer+"\n"))
}
