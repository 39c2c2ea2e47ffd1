package search

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/exchange"
)

// maxTextBytes bounds the text of one document that is analyzed; the rest
// of a longer page is not indexed.
const maxTextBytes = 1 << 20

// Doc is the searchable text of one capture.
type Doc struct {
	Title string
	Text  string
}

// Indexable reports whether a version of this status and media type has
// text to index: a 200 answer of HTML, plain text or PDF. Every other
// version (a 404, a redirect, an image) ends the previous version's
// postings.
func Indexable(status int, contentType string) bool {
	if status != 200 {
		return false
	}
	mt := strings.ToLower(archive.MediaType(contentType))
	return exchange.IsHTML(mt) || mt == "text/plain" || isPDF(mt)
}

// isPDF reports whether a lower-case media type is PDF's.
func isPDF(mt string) bool { return mt == "application/pdf" || mt == "application/x-pdf" }

// ErrNotText reports a capture with no text to index (not Indexable).
var ErrNotText = errors.New("search: not a text capture")

// Extract returns the title and visible text of a capture's payload, and
// false when the capture has none to index (ExtractDoc fails).
func Extract(url string, status int, contentType string, body []byte) (Doc, bool) {
	d, err := ExtractDoc(url, status, contentType, body)
	return d, err == nil
}

// ExtractDoc returns the title and visible text of a capture's payload.
// HTML gives its <title> and the text outside script, style and head
// (exchange.ParseHTML); plain text is its own text, untitled; a PDF gives
// its pages' text, bounded in bytes, pages and time (extractPDF), and
// its document title or else its first line. Invalid UTF-8 is dropped.
// The error is ErrNotText for a capture that is not Indexable, and wraps
// ErrUnreadable for a PDF whose text cannot be read.
func ExtractDoc(url string, status int, contentType string, body []byte) (Doc, error) {
	if !Indexable(status, contentType) {
		return Doc{}, ErrNotText
	}
	mt := strings.ToLower(archive.MediaType(contentType))
	var d Doc
	switch {
	case isPDF(mt):
		var err error
		if d, err = extractPDF(body, defaultPDFLimits); err != nil {
			return Doc{}, err
		}
	case exchange.IsHTML(mt):
		if len(body) > 4*maxTextBytes {
			body = body[:4*maxTextBytes]
		}
		p := exchange.ParseHTML(url, body)
		d = Doc{Title: p.Title, Text: p.Text}
	default:
		if len(body) > 4*maxTextBytes {
			body = body[:4*maxTextBytes]
		}
		d = Doc{Text: strings.Join(strings.Fields(string(body)), " ")}
	}
	d.Title = clean(d.Title, 1024)
	d.Text = clean(d.Text, maxTextBytes)
	return d, nil
}

// ExtractCapture is Extract for a stored capture.
func ExtractCapture(c *archive.Capture) (Doc, bool) {
	return Extract(c.URL, c.Status, c.Header.Get("Content-Type"), c.Body)
}

// ExtractCaptureDoc is ExtractDoc for a stored capture.
func ExtractCaptureDoc(c *archive.Capture) (Doc, error) {
	return ExtractDoc(c.URL, c.Status, c.Header.Get("Content-Type"), c.Body)
}

// clean makes s valid UTF-8 of at most n bytes.
func clean(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	return s
}
