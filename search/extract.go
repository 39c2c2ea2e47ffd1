package search

import (
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
// text to index: a 200 answer of HTML or plain text. Every other version
// (a 404, a redirect, an image) ends the previous version's postings.
func Indexable(status int, contentType string) bool {
	if status != 200 {
		return false
	}
	mt := strings.ToLower(archive.MediaType(contentType))
	return exchange.IsHTML(mt) || mt == "text/plain"
}

// Extract returns the title and visible text of a capture's payload, and
// false when the capture has none to index (Indexable). HTML gives its
// <title> and the text outside script, style and head (exchange.ParseHTML);
// plain text is its own text, untitled. Invalid UTF-8 is dropped.
func Extract(url string, status int, contentType string, body []byte) (Doc, bool) {
	if !Indexable(status, contentType) {
		return Doc{}, false
	}
	if len(body) > 4*maxTextBytes {
		body = body[:4*maxTextBytes]
	}
	var d Doc
	if exchange.IsHTML(strings.ToLower(archive.MediaType(contentType))) {
		p := exchange.ParseHTML(url, body)
		d = Doc{Title: p.Title, Text: p.Text}
	} else {
		d = Doc{Text: strings.Join(strings.Fields(string(body)), " ")}
	}
	d.Title = clean(d.Title, 1024)
	d.Text = clean(d.Text, maxTextBytes)
	return d, true
}

// ExtractCapture is Extract for a stored capture.
func ExtractCapture(c *archive.Capture) (Doc, bool) {
	return Extract(c.URL, c.Status, c.Header.Get("Content-Type"), c.Body)
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
