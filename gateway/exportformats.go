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
//	       WACZSigner
//	links  the link graph, "source<TAB>target<TAB>YYYY-MM-DD" per link of
//	       each HTML version (text/tab-separated-values)
//	text   one JSON line per HTML version: url, timestamp, digest, peer,
//	       title, text (application/x-ndjson)
//
// links and text resume like the WARC stream: after=<cursor>, with the
// exact cursor of the last version converted from the Herod-Export-Cursor
// trailer or, for text, from the "cursor" field of the last line received.
// Every stream ends with the Herod-Export-Status trailer.

// Export formats.
const (
	FormatWARC  = "warc"
	FormatWACZ  = "wacz"
	FormatLinks = "links"
	FormatText  = "text"
)

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
	FormatWACZ:  {contentType: "application/zip", ext: ".wacz"},
	FormatLinks: {contentType: "text/tab-separated-values; charset=utf-8", ext: ".links.tsv", resumable: true},
	FormatText:  {contentType: "application/x-ndjson", ext: ".text.jsonl", resumable: true},
}

// parseFormat reads format=; "" means the WARC stream.
func parseFormat(v string) (string, error) {
	switch v {
	case "", FormatWARC:
		return FormatWARC, nil
	}
	if _, ok := exportFormats[v]; !ok {
		return "", fmt.Errorf("%w: format=%.20q: want warc, wacz, links or text", ErrQuery, v)
	}
	return v, nil
}

// serveConverted streams the export of q after the cursor after,
// converted to format, which is not FormatWARC.
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
	err := s.convert(r.Context(), q, after, format, cw, func(c string) { last = c })
	s.endExport(w, bw, cw, q, format, last, err)
}

// convert runs the Exporter into a pipe and the converter of format on
// the other end, writing to w. progress gets the exact resume cursor of
// each converted version.
func (s *Server) convert(ctx context.Context, q cdx.Query, after, format string, w io.Writer, progress func(string)) error {
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	export := func() error { return s.exp.Export(ctx, q, pw, after) }
	if pe, ok := s.exp.(ProgressExporter); ok && format == FormatWACZ && s.lim.MaxWACZRecords > 0 {
		// The WACZ's index grows with its records until it is
		// written at the end: stop a selection too large for it.
		n := 0
		export = func() error {
			return pe.ExportProgress(ctx, q, pw, after, func(string) {
				if n++; n > s.lim.MaxWACZRecords {
					cancelCause(fmt.Errorf("%w (%d records): export format=warc, which streams and resumes, or narrow the selection with from= and to=",
						ErrWACZTooLarge, s.lim.MaxWACZRecords))
				}
			})
		}
	}
	go func() {
		err := export()
		pw.CloseWithError(err)
		done <- err
	}()
	cursor := func(m *exchange.Member) { progress(m.Cursor()) }
	var err error
	switch format {
	case FormatLinks:
		_, err = exchange.Links(pr, w, cursor)
	case FormatText:
		_, err = exchange.Texts(pr, w, cursor)
	default:
		o := exchange.WACZOptions{Title: "herod export of " + q.Match.String() + " " + q.URL}
		if sg, ok := s.cfg.Archive.(WACZSigner); ok {
			o.Signer = sg.ExportSigner()
		}
		z := exchange.NewWACZ(w, o)
		if _, err = z.AddWARC(pr); err == nil {
			err = z.Close()
		}
	}
	pr.CloseWithError(errConverterDone)
	if cause := context.Cause(ctx); errors.Is(cause, ErrWACZTooLarge) {
		err = cause
	}
	cancel()
	if eerr := <-done; eerr != nil && err == nil {
		err = eerr
	}
	return err
}

// ErrWACZTooLarge reports a WACZ export past Limits.MaxWACZRecords.
var ErrWACZTooLarge = errors.New("gateway: selection too large for one WACZ")

// errConverterDone stops an Exporter whose converter has finished early.
var errConverterDone = fmt.Errorf("gateway: export converter stopped")
