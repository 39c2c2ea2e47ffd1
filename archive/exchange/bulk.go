package exchange

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/herod-archive/herod/internal/anchortext"
)

// TextLine is one line of the plain-text export: an archived HTML version
// and the text a reader sees in it.
type TextLine struct {
	URL       string `json:"url"`
	Timestamp string `json:"timestamp"` // YYYYMMDDhhmmss, UTC
	Status    int    `json:"status"`    // of the HTTP response
	Digest    string `json:"digest"`    // WARC-Payload-Digest
	Peer      string `json:"peer,omitempty"`
	Title     string `json:"title,omitempty"`
	Text      string `json:"text"`
	// Cursor resumes the stream after this line (Member.Cursor).
	Cursor string `json:"cursor"`
}

// BulkStats counts what Links or Texts wrote.
type BulkStats struct {
	Versions int `json:"versions"` // HTML versions read
	Lines    int `json:"lines"`    // lines written
}

// htmlVersions calls fn for each response record of r whose payload is
// HTML, with the record's member, URL and payload.
func htmlVersions(r io.Reader, fn func(m *Member, payload []byte) error) error {
	return Records(r, func(m *Member) error {
		if m.Type() != "response" {
			return nil // revisits repeat a version's links and text
		}
		_, h, payload, err := m.HTTP()
		if err != nil {
			return err
		}
		if !IsHTML(MediaType(h.Get("Content-Type"))) {
			return nil
		}
		return fn(m, payload)
	})
}

// Links reads a .warc.gz stream and writes its link graph to w: for every
// HTML version, one "source<TAB>target<TAB>YYYY-MM-DD<TAB>anchor" line per
// distinct canonical http(s) link (the day of the capture, UTC; the
// link's anchor text as the link index keeps it, internal/anchortext,
// empty for a link without one such as an image), in stream order.
// progress, if non-nil, is called with each version's member after its
// lines are written.
func Links(r io.Reader, w io.Writer, progress func(*Member)) (BulkStats, error) {
	st, err := eachHTML(r, w, progress, func(bw *bufio.Writer, m *Member, payload []byte) (int, error) {
		u, day := m.URL(), m.Time().Format("2006-01-02")
		var anchors map[string]string
		if base, err := url.Parse(u); err == nil {
			anchors = anchortext.Of(base, payload)
		}
		n := 0
		for _, l := range ParseHTML(u, payload).Links {
			if _, err := fmt.Fprintf(bw, "%s\t%s\t%s\t%s\n", tsvField(u), tsvField(l), day, tsvField(anchors[l])); err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	})
	if err != nil {
		return st, fmt.Errorf("exchange links: %w", err)
	}
	return st, nil
}

// eachHTML runs write for every HTML version of r with a buffered w,
// counting versions and the lines write reports, and flushes before each
// progress call and at the end.
func eachHTML(r io.Reader, w io.Writer, progress func(*Member), write func(*bufio.Writer, *Member, []byte) (int, error)) (BulkStats, error) {
	var st BulkStats
	bw := bufio.NewWriterSize(w, 64<<10)
	err := htmlVersions(r, func(m *Member, payload []byte) error {
		st.Versions++
		n, err := write(bw, m, payload)
		st.Lines += n
		if err != nil {
			return err
		}
		if progress != nil {
			if err := bw.Flush(); err != nil {
				return err
			}
			progress(m)
		}
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	return st, err
}

// tsvField keeps a URL on its line and in its column (canonical URLs
// escape both, so this only guards).
func tsvField(s string) string {
	return strings.NewReplacer("\t", "%09", "\n", "%0A", "\r", "%0D").Replace(s)
}

// TextOptions shape TextsWith.
type TextOptions struct {
	// ErrorPages keeps the HTML versions answered with a 4xx or 5xx
	// status (a "not found" page is not the text of its URL); their
	// lines say so by their status. By default they are left out.
	ErrorPages bool
}

// Texts is TextsWith without error pages.
func Texts(r io.Reader, w io.Writer, progress func(*Member)) (BulkStats, error) {
	return TextsWith(r, w, progress, TextOptions{})
}

// TextsWith reads a .warc.gz stream and writes one JSON line (TextLine)
// per HTML version to w, in stream order, leaving out error pages unless
// o.ErrorPages. progress is as for Links, called for every HTML version,
// written or left out.
func TextsWith(r io.Reader, w io.Writer, progress func(*Member), o TextOptions) (BulkStats, error) {
	st, err := eachHTML(r, w, progress, func(bw *bufio.Writer, m *Member, payload []byte) (int, error) {
		if m.Status() >= 400 && !o.ErrorPages {
			return 0, nil
		}
		p := ParseHTML(m.URL(), payload)
		line := TextLine{URL: m.URL(), Timestamp: timestamp14(m.Time()), Status: m.Status(), Digest: m.Record.Header.Get("Warc-Payload-Digest"),
			Peer: m.Peer(), Title: p.Title, Text: p.Text, Cursor: m.Cursor()}
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(line); err != nil {
			return 0, err
		}
		return 1, nil
	})
	if err != nil {
		return st, fmt.Errorf("exchange texts: %w", err)
	}
	return st, nil
}
