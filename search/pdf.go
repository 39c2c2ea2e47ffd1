package search

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ledongthuc/pdf"
)

// ErrUnreadable reports a capture that claims a searchable media type but
// whose text could not be read (a broken, hostile, encrypted or oversized
// PDF). The indexer skips it and counts it (IndexStats.Unreadable).
var ErrUnreadable = errors.New("search: unreadable document")

// pdfLimits bounds the work spent on one PDF: the work of a hostile or
// broken file is cut off by each, and what it read so far is kept.
type pdfLimits struct {
	MaxBytes int           // larger files are not read at all
	MaxPages int           // pages read, in page-tree order
	MaxRead  int64         // bytes read from the file in all (objects are re-read)
	Deadline time.Duration // wall time for one file
}

// defaultPDFLimits are the indexer's bounds (docs/search.md, Extraction).
var defaultPDFLimits = pdfLimits{
	MaxBytes: 32 << 20,
	MaxPages: 1000,
	MaxRead:  256 << 20,
	Deadline: 5 * time.Second,
}

// errPDFStop ends an extraction that reached a limit.
var errPDFStop = errors.New("pdf limit reached")

// pdfFile is the file as the PDF library reads it: every read is counted
// against the byte budget and checked against the deadline, and fails
// past either (or once stopped), so that the library's parser, which reads
// the file again for every object it resolves, unwinds instead of
// looping or running on.
type pdfFile struct {
	b        *bytes.Reader
	read     atomic.Int64
	max      int64
	deadline time.Time
	stopped  atomic.Bool
}

func (f *pdfFile) ReadAt(p []byte, off int64) (int, error) {
	if f.stopped.Load() || time.Now().After(f.deadline) || f.read.Add(int64(len(p))) > f.max {
		f.stopped.Store(true)
		return 0, errPDFStop
	}
	return f.b.ReadAt(p, off)
}

// extractPDF returns the text of a PDF's pages and its title: the
// document information's Title, else its first line of text. Within the
// limits it keeps what it read; a file it cannot open, or whose first
// page already fails, is ErrUnreadable. It never panics: the parser runs
// in its own goroutine, recovered, and is abandoned at the deadline (its
// reads then fail, so it ends soon after).
func extractPDF(body []byte, lim pdfLimits) (Doc, error) {
	if len(body) > lim.MaxBytes {
		return Doc{}, fmt.Errorf("%w: pdf of %d bytes (at most %d)", ErrUnreadable, len(body), lim.MaxBytes)
	}
	f := &pdfFile{b: bytes.NewReader(body), max: lim.MaxRead, deadline: time.Now().Add(lim.Deadline)}
	type result struct {
		d   Doc
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if x := recover(); x != nil {
				r = result{err: fmt.Errorf("%w: pdf: %v", ErrUnreadable, x)}
			}
			done <- r
		}()
		r.d, r.err = readPDF(f, int64(len(body)), lim.MaxPages)
	}()
	t := time.NewTimer(lim.Deadline + 100*time.Millisecond)
	defer t.Stop()
	select {
	case r := <-done:
		return r.d, r.err
	case <-t.C:
		f.stopped.Store(true)
		return Doc{}, fmt.Errorf("%w: pdf: no text within %v", ErrUnreadable, lim.Deadline)
	}
}

// readPDF opens f and reads its pages' text (at most maxPages, and
// maxTextBytes of text).
func readPDF(f *pdfFile, size int64, maxPages int) (Doc, error) {
	r, err := pdf.NewReader(f, size)
	if err != nil {
		return Doc{}, fmt.Errorf("%w: pdf: %v", ErrUnreadable, err)
	}
	var d Doc
	var text strings.Builder
	pages, err := pdfPages(r, maxPages)
	for i, p := range pages {
		perr := pageText(p, &text)
		if perr != nil && !errors.Is(perr, errPDFStop) && i == 0 && text.Len() == 0 {
			return Doc{}, fmt.Errorf("%w: pdf page 1: %v", ErrUnreadable, perr)
		}
		if perr != nil && (errors.Is(perr, errPDFStop) || f.stopped.Load()) {
			break
		}
		text.WriteByte('\n')
	}
	if len(pages) == 0 {
		if err == nil {
			err = errors.New("no pages")
		}
		return Doc{}, fmt.Errorf("%w: pdf pages: %v", ErrUnreadable, err)
	}
	d.Text = text.String()
	if !f.stopped.Load() {
		d.Title = pdfTitle(r)
	}
	if d.Title == "" {
		d.Title = firstLine(d.Text, 200)
	}
	d.Text = strings.Join(strings.Fields(d.Text), " ")
	return d, nil
}

// pdfPages walks the page tree depth first and returns at most max
// pages; a tree deeper than 32 levels or of more than 4·max+64 nodes (a
// cycle) is cut there.
func pdfPages(r *pdf.Reader, max int) (out []pdf.Page, err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("page tree: %v", x)
		}
	}()
	nodes := 4*max + 64
	var walk func(v pdf.Value, depth int)
	walk = func(v pdf.Value, depth int) {
		if len(out) >= max || depth > 32 || nodes == 0 {
			return
		}
		nodes--
		switch v.Key("Type").Name() {
		case "Page":
			out = append(out, pdf.Page{V: v})
		case "Pages":
			kids := v.Key("Kids")
			for i := 0; i < kids.Len() && len(out) < max; i++ {
				walk(kids.Index(i), depth+1)
			}
		}
	}
	walk(r.Trailer().Key("Root").Key("Pages"), 0)
	return out, nil
}

// pageText appends one page's text to b, words apart where the page
// moves to a new line or leaves a word-sized gap; it stops with
// errPDFStop once b holds maxTextBytes.
func pageText(p pdf.Page, b *strings.Builder) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if e, ok := x.(error); ok && errors.Is(e, errPDFStop) {
				err = errPDFStop
				return
			}
			err = fmt.Errorf("%v", x)
		}
	}()
	contents := p.V.Key("Contents")
	if contents.IsNull() {
		return nil
	}
	fonts := map[string]pdf.TextEncoding{}
	var enc pdf.TextEncoding
	show := func(raw string) {
		if enc == nil {
			b.WriteString(raw)
		} else {
			b.WriteString(enc.Decode(raw))
		}
		if b.Len() >= maxTextBytes {
			panic(errPDFStop)
		}
	}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT", "ET", "T*", "Tm":
			b.WriteByte('\n')
		case "Td", "TD":
			if len(args) == 2 && args[1].Float64() != 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		case "Tf":
			if len(args) != 2 {
				return
			}
			name := args[0].Name()
			e, ok := fonts[name]
			if !ok {
				font := p.Font(name)
				if !font.V.IsNull() {
					e = font.Encoder()
				}
				fonts[name] = e
			}
			enc = e
		case "'", "\"":
			b.WriteByte('\n')
			if len(args) > 0 {
				show(args[len(args)-1].RawString())
			}
		case "Tj":
			if len(args) == 1 {
				show(args[0].RawString())
			}
		case "TJ":
			if len(args) != 1 {
				return
			}
			v := args[0]
			for i := 0; i < v.Len(); i++ {
				x := v.Index(i)
				switch x.Kind() {
				case pdf.String:
					show(x.RawString())
				case pdf.Integer, pdf.Real:
					// A shift of more than a quarter em left is a gap
					// between words.
					if x.Float64() < -250 {
						b.WriteByte(' ')
					}
				}
			}
		}
	})
	return nil
}

// pdfTitle returns the document information's Title, if any.
func pdfTitle(r *pdf.Reader) (t string) {
	defer func() {
		if recover() != nil {
			t = ""
		}
	}()
	return strings.Join(strings.Fields(r.Trailer().Key("Info").Key("Title").Text()), " ")
}

// firstLine returns the first non-blank line of s, spaces collapsed, at
// most n bytes.
func firstLine(s string, n int) string {
	for line := range strings.Lines(s) {
		if l := strings.Join(strings.Fields(line), " "); l != "" {
			return cut(l, n)
		}
	}
	return ""
}
