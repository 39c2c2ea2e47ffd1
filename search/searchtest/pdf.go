package searchtest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// PDFPage is one page of a test PDF: its lines of text, each shown with
// Tj on a line of its own, and Kerned, one line shown with TJ in pieces
// (kerned within words, spaced between them) as typesetters write it.
type PDFPage struct {
	Lines  []string
	Kerned []string // the words of one more line; none when empty
}

// PDF writes a valid PDF 1.4 file by hand: a catalog, a page tree, the
// standard Helvetica font in WinAnsiEncoding, each page's content stream
// (zlib-compressed when compress is set), and a document information
// dictionary with title (none when title is empty). Text is ASCII.
func PDF(title string, compress bool, pages ...PDFPage) []byte {
	var objs []string // objs[i] is object i+1's body
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	add("<< /Type /Catalog /Pages 2 0 R >>")
	add("") // the page tree, once the pages are known
	font := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	info := 0
	if title != "" {
		info = add(fmt.Sprintf("<< /Title %s /Producer (herod searchtest) >>", pdfString(title)))
	}
	var kids []string
	for _, p := range pages {
		var c strings.Builder
		c.WriteString("BT /F1 12 Tf 72 720 Td\n")
		for i, l := range p.Lines {
			if i > 0 {
				c.WriteString("0 -14 Td\n")
			}
			fmt.Fprintf(&c, "%s Tj\n", pdfString(l))
		}
		if len(p.Kerned) > 0 {
			c.WriteString("0 -14 Td [")
			for i, w := range p.Kerned {
				if i > 0 {
					c.WriteString(" -333 ")
				}
				h := len(w) / 2
				fmt.Fprintf(&c, "%s -15 %s", pdfString(w[:h]), pdfString(w[h:]))
			}
			c.WriteString("] TJ\n")
		}
		c.WriteString("ET\n")
		stream := []byte(c.String())
		filter := ""
		if compress {
			var z bytes.Buffer
			w := zlib.NewWriter(&z)
			w.Write(stream)
			w.Close()
			stream, filter = z.Bytes(), " /Filter /FlateDecode"
		}
		content := add(fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(stream), filter, stream))
		page := add(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", font, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))

	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R", len(objs)+1)
	if info != 0 {
		fmt.Fprintf(&b, " /Info %d 0 R", info)
	}
	fmt.Fprintf(&b, " >>\nstartxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}

// pdfString is s as a PDF literal string.
func pdfString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return "(" + r.Replace(s) + ")"
}
