package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/internal/buildinfo"
	"github.com/herod-archive/herod/internal/canon"
)

// The export stream is WebBase's "stream a site": a researcher pulls every
// version of a host or URL prefix, optionally within a date range, as one
// .warc.gz (one gzip member per record), and resumes an interrupted pull
// where it stopped:
//
//	/export?host=<host>|prefix=<url>|url=<url>|domain=<host>|surt=<prefix>|all=1
//	       [&from=<ts>][&to=<ts>][&regex=<re>][&type=<mime>][&status=<n>][&latest=1]
//	       [&sample=<share>][&part=<i>/<n>][&revisits=1][&after=<cursor>]
//	       [&format=warc|wacz|links|text][&outlinks=1]
//
// (ParseExportQuery reads the selection.) outlinks=1 adds after each HTML
// response a metadata record of its outlinks (exchange.WithOutlinks).
//
// (exportformats.go converts the stream to the other formats.)
//
// With revisits=1 the stream also holds a WARC revisit record
// (identical-payload-digest profile) for each day a URL was checked and
// found unchanged, in time order among the URL's responses, as
// `herod export --revisits` writes.
//
// The cursor of a record is archive.WaybackCursor(WARC-Target-URI, WARC-Date): after a
// broken transfer the client drops the incomplete last record, takes the
// cursor of the last complete one and asks again with after=<cursor>. When
// the archive is a ProgressExporter the response also carries the exact
// cursor of the last record sent in the Herod-Export-Cursor trailer. The
// response ends with the trailer Herod-Export-Status: "complete", or
// "error" together with Herod-Export-Error; a stream without "complete" is
// incomplete.

// Trailer names of the export stream.
const (
	TrailerExportStatus = "Herod-Export-Status"
	TrailerExportError  = "Herod-Export-Error"
	TrailerExportCursor = "Herod-Export-Cursor"
)

// exportBuffer is the buffer between the Exporter and the connection.
const exportBuffer = 64 << 10

// ParseCursor checks the resume cursor of a request, in either form of
// archive.ParseCursor with a URL the gateway could have archived, and
// returns its URL and time (for the Wayback form, the start of its
// second). Errors wrap ErrQuery.
func ParseCursor(c string) (url string, t time.Time, err error) {
	k, err := archive.ParseCursor(c)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	if _, err := ArchivedURL(k.URL); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: cursor url: %v", ErrQuery, err)
	}
	if len(c)-len(k.URL) == len(" "+TimestampLayout) {
		return k.URL, k.Time.Truncate(time.Second), nil
	}
	return k.URL, k.Time, nil
}

// ParseExportQuery reads the selection of an /export request (the flags
// of herod export are the same parameters): exactly one scope, host,
// prefix, url, domain (the host and its subdomains), surt (a SURT
// prefix) or all=1 (the whole archive), then optional filters: from, to,
// regex (RE2, matching the whole URL), type (a media type, or "image/*"),
// status, latest=1 (each URL's newest version only), sample ("1%" or
// "0.01": that share of URLs, by URL hash), part ("I/N": the I-th of N
// disjoint parts, by ring key) and revisits (1 or true; 0, false or
// absent: none).
func ParseExportQuery(p url.Values) (cdx.Query, error) {
	var q cdx.Query
	n := 0
	for _, k := range []string{"host", "prefix", "url", "domain", "surt", "all"} {
		v := strings.TrimSpace(p.Get(k))
		if v == "" || (k == "all" && (v == "0" || v == "false")) {
			continue
		}
		n++
		switch k {
		case "surt":
			q.Match, q.URL = cdx.MatchSURT, strings.ToLower(v)
			if len(v) > canon.MaxLen {
				return q, fmt.Errorf("%w: surt of %d bytes", ErrQuery, len(v))
			}
			continue
		case "all":
			if v != "1" && v != "true" {
				return q, fmt.Errorf("%w: all=%.20q: want 1", ErrQuery, v)
			}
			q.Match = cdx.MatchAll
			continue
		}
		u, err := ArchivedURL(v)
		if err != nil {
			return q, fmt.Errorf("%w: %s: %v", ErrQuery, k, err)
		}
		switch k {
		case "host":
			q.Match, q.URL = cdx.MatchHost, hostOf(u)
		case "domain":
			q.Match, q.URL = cdx.MatchDomain, strings.ToLower(hostOf(u))
		case "prefix":
			q.Match, q.URL = cdx.MatchPrefix, u
		default:
			q.Match, q.URL = cdx.MatchExact, u
		}
	}
	if n != 1 {
		return q, fmt.Errorf("%w: give exactly one of host, prefix, url, domain, surt or all=1", ErrQuery)
	}
	var err error
	if f := p.Get("from"); f != "" {
		if q.From, err = ParseTimestampFrom(f); err != nil {
			return q, fmt.Errorf("%w: from: %v", ErrQuery, err)
		}
	}
	if t := p.Get("to"); t != "" {
		if q.To, err = ParseTimestamp(t); err != nil {
			return q, fmt.Errorf("%w: to: %v", ErrQuery, err)
		}
	}
	if q.Revisits, err = parseBool(p, "revisits"); err != nil {
		return q, err
	}
	if err := parseFilter(p, &q.Filter); err != nil {
		return q, err
	}
	if q.Latest && q.Revisits {
		return q, fmt.Errorf("%w: latest=1 exports no revisits: drop revisits", ErrQuery)
	}
	return q, nil
}

// parseBool reads a boolean parameter: 1 or true; 0, false or absent.
func parseBool(p url.Values, k string) (bool, error) {
	switch v := p.Get(k); v {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, fmt.Errorf("%w: %s=%.20q: want 1 or 0", ErrQuery, k, v)
	}
}

// parseFilter reads the filter parameters of an export into f.
func parseFilter(p url.Values, f *archive.Filter) error {
	f.Regex = p.Get("regex")
	f.Type = strings.ToLower(strings.TrimSpace(p.Get("type")))
	var err error
	if v := p.Get("status"); v != "" {
		if f.Status, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("%w: status=%.20q: want an HTTP status", ErrQuery, v)
		}
	}
	if f.Latest, err = parseBool(p, "latest"); err != nil {
		return err
	}
	if v := p.Get("sample"); v != "" {
		if f.Sample, err = parseSample(v); err != nil {
			return fmt.Errorf("%w: sample=%.20q: %v", ErrQuery, v, err)
		}
	}
	if v := p.Get("part"); v != "" {
		i, n, ok := strings.Cut(v, "/")
		var e1, e2 error
		f.Part, e1 = strconv.Atoi(i)
		f.Parts, e2 = strconv.Atoi(n)
		if !ok || e1 != nil || e2 != nil || f.Parts < 1 {
			return fmt.Errorf("%w: part=%.20q: want I/N, e.g. 1/4", ErrQuery, v)
		}
	}
	if err := f.Check(); err != nil {
		return fmt.Errorf("%w: %v", ErrQuery, err)
	}
	return nil
}

// parseSample reads a sample share, "1%" or "0.01", as URLs per million.
func parseSample(v string) (int, error) {
	scale := float64(archive.SampleAll)
	if s, ok := strings.CutSuffix(v, "%"); ok {
		v, scale = s, scale/100
	}
	x, err := strconv.ParseFloat(v, 64)
	ppm := math.Round(x * scale)
	if err != nil || math.IsNaN(x) || ppm < 1 || ppm > archive.SampleAll {
		return 0, errors.New("want a share from 0.0001% to 100%, e.g. 1% or 0.01")
	}
	return int(ppm), nil
}

// countingWriter counts the bytes that reached the buffer.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// serveExport streams the WARC records of a query from the Exporter, in
// one of client cl's slots and at its rate.
func (s *Server) serveExport(w http.ResponseWriter, r *http.Request, cl *client) {
	p := r.URL.Query()
	q, err := ParseExportQuery(p)
	if err != nil {
		s.badRequest(w, err.Error())
		return
	}
	after := p.Get("after")
	if after != "" {
		if _, _, err := ParseCursor(after); err != nil {
			s.badRequest(w, err.Error())
			return
		}
	}
	format, err := parseFormat(p.Get("format"))
	if err != nil {
		s.badRequest(w, err.Error())
		return
	}
	outlinks, err := parseBool(p, "outlinks")
	if err == nil && outlinks && format != exchange.FormatWARC {
		err = fmt.Errorf("%w: outlinks=1 adds metadata records to a WARC: format=%s has none", ErrQuery, format)
	}
	if err != nil {
		s.badRequest(w, err.Error())
		return
	}
	if r.Method != http.MethodHead {
		if !s.exportSlot() {
			s.busy(w, r, "too many exports in flight")
			return
		}
		defer s.exportDone()
	}
	if format != exchange.FormatWARC {
		s.serveConverted(w, r, q, after, format, cl)
		return
	}
	s.stats.exports.Add(1)
	h := w.Header()
	h.Set("Content-Type", "application/warc")
	h.Set("Content-Disposition", `attachment; filename="`+exportName(q)+`"`)
	h.Set("Trailer", TrailerExportStatus+", "+TrailerExportError)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	bw := bufio.NewWriterSize(throttle(r.Context(), w, cl), exportBuffer)
	cw := &countingWriter{w: bw}
	var info *exchange.WARCInfo
	if after == "" && p.Get("warcinfo") != "0" {
		// A fresh file starts with its warcinfo record; a resumed pull
		// appends to a file that has one (herod export writes its own).
		info = s.warcInfo(r, q)
	}
	last := ""
	src := func(ctx context.Context, w io.Writer) error { return s.exp.Export(ctx, q, w, after) }
	if outlinks {
		// The converter reports progress, after a record and its
		// metadata record.
		h.Set("Trailer", TrailerExportStatus+", "+TrailerExportError+", "+TrailerExportCursor)
		_, err = exchange.Export(r.Context(), src, cw, exchange.ExportOptions{Info: info, Outlinks: true, Progress: func(c string) { last = c }})
		s.endExport(w, bw, cw, q, exchange.FormatWARC, last, err)
		return
	}
	if pe, ok := s.exp.(ProgressExporter); ok {
		h.Set("Trailer", TrailerExportStatus+", "+TrailerExportError+", "+TrailerExportCursor)
		src = func(ctx context.Context, w io.Writer) error {
			return pe.ExportProgress(ctx, q, w, after, func(c string) { last = c })
		}
	}
	_, err = exchange.Export(r.Context(), src, cw, exchange.ExportOptions{Info: info})
	s.endExport(w, bw, cw, q, exchange.FormatWARC, last, err)
}

// warcInfo returns the warcinfo record that opens a WARC export of q.
func (s *Server) warcInfo(r *http.Request, q cdx.Query) *exchange.WARCInfo {
	return &exchange.WARCInfo{Filename: exportName(q), Software: "herod " + buildinfo.Read().Version,
		IsPartOf:    "herod gateway export " + r.URL.RawQuery,
		Description: "captures selected by " + r.URL.RawQuery + ", ring-wide, through the gateway at " + r.Host}
}

// exportSlot takes one of the Limits.MaxExports places, or reports false.
func (s *Server) exportSlot() bool { return s.exports == nil || s.exports.tryAcquire(1) }

// exportDone gives back an exportSlot.
func (s *Server) exportDone() {
	if s.exports != nil {
		s.exports.release(1)
	}
}

// endExport finishes an export of q in format that wrote through bw into
// cw and ended with err: nothing sent yet, a plain error status; else the
// trailers say where it stopped (the cursor of the last version written)
// and whether it is complete.
func (s *Server) endExport(w http.ResponseWriter, bw *bufio.Writer, cw *countingWriter, q cdx.Query, format, last string, err error) {
	h := w.Header()
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		s.stats.exportErrors.Add(1)
	}
	if err != nil && cw.n == 0 {
		// Nothing reached the client: answer with a plain error status.
		s.log.Warn("gateway: export", "query", q.URL, "format", format, "err", err)
		h.Del("Trailer")
		h.Del("Content-Disposition")
		code := http.StatusBadGateway
		if errors.Is(err, ErrWACZTooLarge) {
			code = http.StatusBadRequest // the selection, not the ring
		}
		http.Error(w, "gateway: export: "+err.Error(), code)
		return
	}
	if last != "" {
		h.Set(TrailerExportCursor, last)
	}
	if err != nil {
		s.log.Warn("gateway: export interrupted", "query", q.URL, "format", format, "bytes", cw.n, "err", err)
		_ = bw.Flush()
		h.Set(TrailerExportStatus, "error")
		h.Set(TrailerExportError, strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	h.Set(TrailerExportStatus, "complete")
}

// exportName is the file name offered for an export.
func exportName(q cdx.Query) string {
	name := q.URL
	switch q.Match {
	case cdx.MatchAll:
		name = "all"
	case cdx.MatchPrefix, cdx.MatchExact:
		name = hostOf(q.URL)
	}
	if q.Parts > 0 {
		name += fmt.Sprintf("-part%dof%d", q.Part, q.Parts)
	}
	name = strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-':
			return c
		}
		return '_'
	}, name)
	if !q.From.IsZero() {
		name += "-" + FormatTimestamp(q.From)
	}
	if !q.To.IsZero() {
		name += "-" + FormatTimestamp(q.To)
	}
	return "herod-" + name + ".warc.gz"
}
