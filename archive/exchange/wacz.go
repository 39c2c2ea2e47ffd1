package exchange

import (
	"archive/zip"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
)

// WACZ member paths and the version written.
const (
	WACZVersion   = "1.1.1"
	WARCPath      = "archive/data.warc.gz"
	IndexPath     = "indexes/index.cdxj"
	PagesPath     = "pages/pages.jsonl"
	PackagePath   = "datapackage.json"
	DigestPath    = "datapackage-digest.json"
	warcName      = "data.warc.gz" // the WARC file name CDXJ lines refer to
	software      = "herod"
	pagesFormat   = "json-pages-1.0"
	sha256Prefix  = "sha256:"
	revisitMime   = "warc/revisit"
	waczTimestamp = time.RFC3339
)

// WACZOptions shape a WACZ file.
type WACZOptions struct {
	// Title is the package's title; empty means "herod export".
	Title string
	// Created is the creation time recorded in datapackage.json and the
	// zip entries; zero means the time NewWACZ is called.
	Created time.Time
	// Signer, if set, signs datapackage-digest.json (see Digest): the
	// signature is over the "sha256:<hex>" hash of datapackage.json, so it
	// asserts that the peer produced this package, whose datapackage.json
	// in turn fixes the SHA-256 of every other file. It says nothing more
	// about the captures than their own WARC-Herod-Signature does.
	Signer archive.Signer
	// Info, if set, is written as the first record of the package's WARC
	// (a warcinfo record, WriteWARCInfo); warcinfo records of the stream
	// AddWARC reads are then left out, so the WARC has one.
	Info *WARCInfo
	// MainPage is the URL of the page a player opens first (the crawl's
	// seed), datapackage.json's mainPageURL, at its first capture. Empty,
	// or a URL without a page in the package: the page captured first.
	MainPage string
	// Screenshot, if set, is asked for the screenshot of each HTML page
	// captured in a browser; the package then holds it and its thumbnail
	// after the page's record (thumbnail.go). An error is counted
	// (WACZStats.ScreenshotErrors) and leaves the page without one.
	Screenshot ScreenshotFunc
}

// WACZStats counts what a WACZ holds.
type WACZStats struct {
	Responses int   `json:"responses"`
	Revisits  int   `json:"revisits"`
	Pages     int   `json:"pages"`
	WARCBytes int64 `json:"warcBytes"`
	// Resources counts resource records (screenshots and thumbnails),
	// Screenshots the pages given a screenshot and its thumbnail, and
	// ScreenshotErrors the pages whose screenshot could not be read.
	Resources        int `json:"resources,omitempty"`
	Screenshots      int `json:"screenshots,omitempty"`
	ScreenshotErrors int `json:"screenshotErrors,omitempty"`
}

// Resource is one file of a WACZ as datapackage.json lists it.
type Resource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"` // "sha256:<hex>"
	Bytes int64  `json:"bytes"`
}

// Package is datapackage.json.
type Package struct {
	Profile     string     `json:"profile"`
	WACZVersion string     `json:"wacz_version"`
	Title       string     `json:"title"`
	Created     string     `json:"created"`
	Software    string     `json:"software"`
	MainPageURL string     `json:"mainPageURL,omitempty"`
	MainPageTS  string     `json:"mainPageDate,omitempty"`
	Resources   []Resource `json:"resources"`
}

// SignedData is the signature block of datapackage-digest.json.
type SignedData struct {
	Hash      string `json:"hash"`
	Created   string `json:"created"`
	Software  string `json:"software"`
	Peer      string `json:"peer"`      // libp2p peer id of the signer: it embeds the Ed25519 public key
	Signature string `json:"signature"` // base64 of the peer's signature of Hash
}

// Digest is datapackage-digest.json.
type Digest struct {
	Path       string      `json:"path"`
	Hash       string      `json:"hash"`
	SignedData *SignedData `json:"signedData,omitempty"`
}

// indexLine is one CDXJ line; the JSON field order follows pywb, with
// herod's provenance last.
type indexLine struct {
	surt, ts string
	URL      string `json:"url"`
	Mime     string `json:"mime,omitempty"`
	Status   string `json:"status,omitempty"`
	Digest   string `json:"digest,omitempty"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
	Peer     string `json:"peer,omitempty"`
}

// pageLine is one line of pages.jsonl.
type pageLine struct {
	ID    string    `json:"id"`
	URL   string    `json:"url"`
	TS    string    `json:"ts"`
	Title string    `json:"title,omitempty"`
	t     time.Time // the capture time, to choose the main page
}

// WACZ writes a WACZ file as a stream: AddWARC stores the WARC member and
// indexes it on the way, Close writes the index, the pages and the
// package descriptors. Every zip entry is stored, not deflated, so
// replay tools can read records by range. Index and pages are held in
// memory until Close (about 200 bytes per record).
type WACZ struct {
	zw      *zip.Writer
	o       WACZOptions
	created string
	res     []Resource
	lines   []indexLine
	pages   []pageLine
	st      WACZStats
	added   bool
	written map[string]bool // resource records in the package, by URL and date
}

// NewWACZ starts a WACZ file on w.
func NewWACZ(w io.Writer, o WACZOptions) *WACZ {
	if o.Created.IsZero() {
		o.Created = time.Now()
	}
	if o.Title == "" {
		o.Title = "herod export"
	}
	return &WACZ{zw: zip.NewWriter(w), o: o, created: o.Created.UTC().Format(waczTimestamp)}
}

// hashedEntry is an open zip entry that hashes and counts its bytes.
type hashedEntry struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (e *hashedEntry) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	e.h.Write(p[:n])
	e.n += int64(n)
	return n, err
}

// create opens a stored entry.
func (z *WACZ) create(path string) (*hashedEntry, error) {
	w, err := z.zw.CreateHeader(&zip.FileHeader{Name: path, Method: zip.Store, Modified: z.o.Created})
	if err != nil {
		return nil, fmt.Errorf("wacz %s: %w", path, err)
	}
	return &hashedEntry{w: w, h: sha256.New()}, nil
}

// done records a finished entry in the package's resources.
func (z *WACZ) done(path string, e *hashedEntry) {
	name := path[strings.LastIndexByte(path, '/')+1:]
	z.res = append(z.res, Resource{Name: name, Path: path, Hash: sha256Prefix + hex.EncodeToString(e.h.Sum(nil)), Bytes: e.n})
}

// AddWARC stores the .warc.gz stream r (one record per gzip member, as
// herod exports write it) as the package's WARC file, indexing every
// record and listing each HTML page answered 200 in pages.jsonl. It may
// be called once. On error the package is incomplete: do not Close it
// into a file a reader would trust.
func (z *WACZ) AddWARC(r io.Reader) (WACZStats, error) {
	if z.added {
		return z.st, errors.New("wacz: AddWARC called twice")
	}
	z.added = true
	e, err := z.create(WARCPath)
	if err != nil {
		return z.st, err
	}
	if z.o.Info != nil {
		if _, err := WriteWARCInfo(e, *z.o.Info); err != nil {
			return z.st, fmt.Errorf("wacz warc: %w", err)
		}
	}
	err = Records(r, func(m *Member) error {
		if z.o.Info != nil && m.Type() == "warcinfo" {
			return nil
		}
		page, err := z.index(m, e.n)
		if err != nil {
			return err
		}
		if _, err := e.Write(m.Raw); err != nil {
			return err
		}
		if page && z.o.Screenshot != nil && m.Record.Header.Get(archive.HeaderBrowser) == "1" {
			return z.addScreenshot(e, m.URL(), m.Time())
		}
		return nil
	})
	z.st.WARCBytes = e.n
	if err != nil {
		return z.st, fmt.Errorf("wacz warc: %w", err)
	}
	z.done(WARCPath, e)
	return z.st, nil
}

// index adds the CDXJ line of m, stored at offset off of the package's
// WARC, and, for an HTML page, its pages entry; it reports whether m is
// such a page.
func (z *WACZ) index(m *Member, off int64) (bool, error) {
	typ := m.Type()
	if typ == "resource" || (typ == "revisit" && len(m.Record.Block) == 0) {
		// A resource record, or the revisit of one (no HTTP head).
		mime := MediaType(m.Record.Header.Get("Content-Type"))
		if typ == "revisit" {
			mime = revisitMime
		}
		z.lines = append(z.lines, indexLine{
			surt: archive.Surt(m.URL()), ts: timestamp14(m.Time()), URL: m.URL(),
			Mime:     mime,
			Digest:   strings.TrimPrefix(m.Record.Header.Get("Warc-Payload-Digest"), "sha1:"),
			Length:   itoa(len(m.Raw)),
			Offset:   fmt.Sprint(off),
			Filename: warcName,
			Peer:     m.Peer(),
		})
		if typ == "revisit" {
			z.st.Revisits++
			return false, nil
		}
		z.st.Resources++
		if z.written == nil {
			z.written = map[string]bool{}
		}
		z.written[resourceKey(m.URL(), m.Time())] = true
		return false, nil
	}
	if typ != "response" && typ != "revisit" {
		return false, nil
	}
	status, h, payload, err := m.HTTP()
	if err != nil {
		return false, err
	}
	u, t := m.URL(), m.Time()
	l := indexLine{
		surt: archive.Surt(u), ts: timestamp14(t), URL: u,
		Mime: MediaType(h.Get("Content-Type")), Status: itoa(status),
		Digest:   strings.TrimPrefix(m.Record.Header.Get("Warc-Payload-Digest"), "sha1:"),
		Length:   itoa(len(m.Raw)),
		Offset:   fmt.Sprint(off),
		Filename: warcName,
		Peer:     m.Peer(),
	}
	if typ == "revisit" {
		l.Mime = revisitMime
		z.st.Revisits++
	} else {
		z.st.Responses++
	}
	z.lines = append(z.lines, l)
	if typ == "response" && status == 200 && IsHTML(MediaType(h.Get("Content-Type"))) {
		z.pages = append(z.pages, pageLine{ID: fmt.Sprintf("%s-%d", l.ts, off), URL: u, TS: t.Format(time.RFC3339), Title: Title(payload), t: t})
		z.st.Pages++
		return true, nil
	}
	return false, nil
}

// addScreenshot writes to e, the package's WARC, the screenshot of the
// page captured at t and its thumbnail, indexed, each unless the package
// holds it already (the export's selection may name the screenshot).
func (z *WACZ) addScreenshot(e *hashedEntry, page string, t time.Time) error {
	shot, err := z.o.Screenshot(page, t)
	if err != nil {
		z.st.ScreenshotErrors++
		return nil
	}
	if shot == nil || z.written[resourceKey(ThumbnailPrefix+page, shot.Time)] {
		return nil
	}
	view, err := archive.EncodeRecord(shot)
	if err != nil {
		z.st.ScreenshotErrors++
		return nil
	}
	var refersTo string
	if err := Records(bytes.NewReader(view), func(m *Member) error {
		refersTo = m.Record.Header.Get("Warc-Record-Id")
		return nil
	}); err != nil {
		return fmt.Errorf("screenshot of %s: %w", page, err)
	}
	thumb, err := thumbnailRecord(page, shot, refersTo)
	if err != nil {
		z.st.ScreenshotErrors++
		return nil
	}
	if z.written[resourceKey(shot.URL, shot.Time)] {
		view = nil
	}
	z.st.Screenshots++
	return Records(io.MultiReader(bytes.NewReader(view), bytes.NewReader(thumb)), func(m *Member) error {
		if _, err := z.index(m, e.n); err != nil {
			return err
		}
		_, err := e.Write(m.Raw)
		return err
	})
}

// resourceKey names a resource record by its URL and date.
func resourceKey(u string, t time.Time) string {
	return u + " " + t.UTC().Format(time.RFC3339Nano)
}

// Close writes the CDXJ index, pages.jsonl, datapackage.json and
// datapackage-digest.json (signed if WACZOptions.Signer is set) and
// finishes the zip. It does not close the underlying writer.
func (z *WACZ) Close() error {
	if !z.added {
		if _, err := z.AddWARC(bytes.NewReader(nil)); err != nil {
			return err
		}
	}
	slices.SortStableFunc(z.lines, func(a, b indexLine) int {
		return cmp.Or(strings.Compare(a.surt, b.surt), strings.Compare(a.ts, b.ts))
	})
	if err := z.writeIndex(); err != nil {
		return err
	}
	if err := z.writePages(); err != nil {
		return err
	}
	pkg := Package{Profile: "data-package", WACZVersion: WACZVersion, Title: z.o.Title,
		Created: z.created, Software: software, Resources: z.res}
	if p, ok := z.mainPage(); ok {
		pkg.MainPageURL, pkg.MainPageTS = p.URL, p.TS
	}
	pj, err := json.MarshalIndent(pkg, "", "  ")
	if err != nil {
		return fmt.Errorf("wacz datapackage: %w", err)
	}
	if err := z.writeFile(PackagePath, pj); err != nil {
		return err
	}
	sum := sha256.Sum256(pj)
	d := Digest{Path: PackagePath, Hash: sha256Prefix + hex.EncodeToString(sum[:])}
	if z.o.Signer != nil {
		sig, err := z.o.Signer.Sign([]byte(d.Hash))
		if err != nil {
			return fmt.Errorf("wacz sign: %w", err)
		}
		d.SignedData = &SignedData{Hash: d.Hash, Created: z.created, Software: software,
			Peer: z.o.Signer.Peer(), Signature: base64.StdEncoding.EncodeToString(sig)}
	}
	dj, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("wacz digest: %w", err)
	}
	if err := z.writeFile(DigestPath, dj); err != nil {
		return err
	}
	if err := z.zw.Close(); err != nil {
		return fmt.Errorf("wacz close: %w", err)
	}
	return nil
}

// mainPage returns the page a player opens first: the first capture of
// WACZOptions.MainPage if the package has one, else the page captured
// first (the first in the stream among equals); false without pages.
func (z *WACZ) mainPage() (pageLine, bool) {
	var best pageLine
	found, seed := false, false
	for _, p := range z.pages {
		isSeed := z.o.MainPage != "" && p.URL == z.o.MainPage
		switch {
		case !found, isSeed && !seed, isSeed == seed && p.t.Before(best.t):
			best, found, seed = p, true, isSeed
		}
	}
	return best, found
}

// writeIndex writes indexes/index.cdxj: "<surt> <timestamp> <json>" lines.
func (z *WACZ) writeIndex() error {
	e, err := z.create(IndexPath)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, l := range z.lines {
		b.Reset()
		b.WriteString(l.surt + " " + l.ts + " ")
		if err := enc.Encode(l); err != nil { // Encode ends the line
			return fmt.Errorf("wacz index: %w", err)
		}
		if _, err := e.Write(b.Bytes()); err != nil {
			return fmt.Errorf("wacz index: %w", err)
		}
	}
	z.done(IndexPath, e)
	return nil
}

// writePages writes pages/pages.jsonl: a header line, then one line per page.
func (z *WACZ) writePages() error {
	e, err := z.create(PagesPath)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(e)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]string{"format": pagesFormat, "id": "pages", "title": "All Pages"}); err != nil {
		return fmt.Errorf("wacz pages: %w", err)
	}
	for _, p := range z.pages {
		if err := enc.Encode(p); err != nil {
			return fmt.Errorf("wacz pages: %w", err)
		}
	}
	z.done(PagesPath, e)
	return nil
}

// writeFile writes a whole stored entry that datapackage.json does not
// list (itself and its digest).
func (z *WACZ) writeFile(path string, data []byte) error {
	e, err := z.create(path)
	if err != nil {
		return err
	}
	if _, err := e.Write(data); err != nil {
		return fmt.Errorf("wacz %s: %w", path, err)
	}
	return nil
}
