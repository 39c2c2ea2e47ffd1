package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/archive/exchange"
)

// Besides the WARC stream, /export converts the same ring-wide stream on
// the fly (format=):
//
//	wacz   a WACZ 1.1.1 package (archive/exchange) of the selection;
//	       not resumable (after= is refused), signed when the archive is a
//	       WACZSigner; pages captured in a browser come with their
//	       screenshot and its thumbnail (urn:thumbnail:<page>)
//	links  the link graph, "source<TAB>target<TAB>YYYY-MM-DD" per link of
//	       each HTML version (text/tab-separated-values)
//	text   one JSON line per HTML version: url, timestamp, digest, peer,
//	       title, text (application/x-ndjson)
//
// links and text resume like the WARC stream: after=<cursor>, with the
// exact cursor of the last version converted from the Herod-Export-Cursor
// trailer or, for text, from the "cursor" field of the last line received.
// Every stream ends with the Herod-Export-Status trailer.

// WACZSigner is implemented by archives whose WACZ exports carry a
// signature (exchange.WACZOptions.Signer): herod's node signs with its
// identity key.
type WACZSigner interface {
	ExportSigner() archive.Signer
}

// exportFormat describes one converted format.
type exportFormat struct {
	contentType, ext string
	resumable        bool
}

var exportFormats = map[string]exportFormat{
	exchange.FormatWACZ:  {contentType: "application/zip", ext: ".wacz"},
	exchange.FormatLinks: {contentType: "text/tab-separated-values; charset=utf-8", ext: ".links.tsv", resumable: true},
	exchange.FormatText:  {contentType: "application/x-ndjson", ext: ".text.jsonl", resumable: true},
}

// parseFormat reads format=; "" means the WARC stream.
func parseFormat(v string) (string, error) {
	switch v {
	case "", exchange.FormatWARC:
		return exchange.FormatWARC, nil
	}
	if _, ok := exportFormats[v]; !ok {
		return "", fmt.Errorf("%w: format=%.20q: want warc, wacz, links or text", ErrQuery, v)
	}
	return v, nil
}

// serveConverted streams the export of q after the cursor after,
// converted to format, which is not exchange.FormatWARC.
func (s *Server) serveConverted(w http.ResponseWriter, r *http.Request, q cdx.Query, after, format string, cl *client) {
	f := exportFormats[format]
	if after != "" && !f.resumable {
		s.badRequest(w, "gateway: format="+format+" cannot resume: export it again whole, or export WARC with after=")
		return
	}
	s.stats.exports.Add(1)
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Disposition", `attachment; filename="`+strings.TrimSuffix(exportName(q), ".warc.gz")+f.ext+`"`)
	h.Set("Trailer", TrailerExportStatus+", "+TrailerExportError+", "+TrailerExportCursor)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	bw := bufio.NewWriterSize(throttle(r.Context(), w, cl), exportBuffer)
	cw := &countingWriter{w: bw}
	last := ""
	err := s.convert(r.Context(), q, after, format, s.warcInfo(r, q), cw, func(c string) { last = c })
	s.endExport(w, bw, cw, q, format, last, err)
}

// convert runs the Exporter through exchange.Export, converting to
// format; a WACZ's data.warc.gz starts with the warcinfo record info.
// progress gets the exact resume cursor of each converted
// version.
func (s *Server) convert(ctx context.Context, q cdx.Query, after, format string, info *exchange.WARCInfo, w io.Writer, progress func(string)) error {
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	src := func(ctx context.Context, w io.Writer) error { return s.exp.Export(ctx, q, w, after) }
	if pe, ok := s.exp.(ProgressExporter); ok && format == exchange.FormatWACZ && s.lim.MaxWACZRecords > 0 {
		// The WACZ's index grows with its records until it is
		// written at the end: stop a selection too large for it.
		n := 0
		src = func(ctx context.Context, w io.Writer) error {
			return pe.ExportProgress(ctx, q, w, after, func(string) {
				if n++; n > s.lim.MaxWACZRecords {
					cancelCause(fmt.Errorf("%w (%d records): export format=warc, which streams and resumes, or narrow the selection with from= and to=",
						ErrWACZTooLarge, s.lim.MaxWACZRecords))
				}
			})
		}
	}
	// A text export asked for error pages (status=404) gets them.
	o := exchange.ExportOptions{Format: format, Progress: progress, Text: exchange.TextOptions{ErrorPages: q.Status >= 400}}
	if format == exchange.FormatWACZ {
		o.WACZ.Info = info
		o.WACZ.Title = "herod export of " + q.Match.String() + " " + q.URL
		// The screenshots of pages captured in a browser, and their
		// thumbnails, through the access rules as any capture.
		o.WACZ.Screenshot = exchange.ScreenshotsOf(ctx, s.cfg.Archive)
		if sg, ok := s.cfg.Archive.(WACZSigner); ok {
			o.WACZ.Signer = sg.ExportSigner()
		}
	}
	_, err := exchange.Export(ctx, src, w, o)
	if cause := context.Cause(ctx); errors.Is(cause, ErrWACZTooLarge) {
		err = cause
	}
	return err
}

// ErrWACZTooLarge reports a WACZ export past Limits.MaxWACZRecords.
var ErrWACZTooLarge = errors.New("gateway: selection too large for one WACZ")
