package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/gateway"
)

// Ring-wide exports: herod export --node streams /export from a gateway,
// keeping only complete records (and, with --outlinks, whole pairs of a
// response and its metadata record) and indexing them with --cdx.

// fromGateway streams a ring-wide export from a gateway's /export.
func (f *exportFlags) fromGateway(ctx context.Context, w io.Writer, stderr io.Writer) error {
	resp, err := f.openGatewayExport(ctx, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	prog := newProgress(stderr, "export")
	info := &exchange.InfoFirst{W: w, Info: f.warcInfo()}
	var (
		index   func(*exchange.Member, int64) error
		indexed *exchange.Index
	)
	if f.cdx != "" {
		// Offsets in the file count the warcinfo record written first.
		indexed = &exchange.Index{Filename: f.warcName()}
		index = func(m *exchange.Member, off int64) error { return indexed.Add(m, info.N+off) }
	}
	n, cursor, err := copyRecords(countingWriter{info, prog}, resp.Body, f.outlinks, func() bool {
		return resp.Trailer.Get(gateway.TrailerExportStatus) == "complete"
	}, index, func(cursor string) { prog.add(1, 0, cursor) })
	prog.done()
	if cursor == "" {
		cursor = f.resume
	}
	if err != nil {
		return resumeHint(fmt.Errorf("export stream: %w", err), cursor)
	}
	if st := resp.Trailer.Get(gateway.TrailerExportStatus); st != "complete" {
		msg := resp.Trailer.Get(gateway.TrailerExportError)
		if msg == "" {
			msg = "the stream ended without its completion trailer"
		}
		return resumeHint(fmt.Errorf("export incomplete: %s", msg), cursor)
	}
	if n == 0 {
		return f.nothingMatched(nil)
	}
	if indexed != nil {
		cf := &lazyFile{path: f.cdx}
		_, err := indexed.WriteTo(cf)
		if cerr := cf.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("cdx: %w", err)
		}
	}
	fmt.Fprintf(stderr, "exported %d records\n", n)
	return nil
}

// copyRecords copies the complete, well-formed gzip members of a .warc.gz
// stream from r to w, one WARC record each, and returns how many it
// copied and the cursor that resumes after the last one, which it also
// passes to copied after each record. A truncated or malformed member is
// not copied, nor a warcinfo record (the export writes its own first).
//
// With outlinks, a record is copied once the next member begins, with
// its metadata record if that is the next member, or at the end of a
// stream that complete reports whole (its trailer, read at the end): a
// stream cut between a response and its metadata record resumes before
// the response, so that neither is missed or repeated.
//
// A request record is held until its response is copied, with it (the
// pair counts as one record): a stream cut between them resumes before
// the request.
//
// index, if set, is called with each record once it is copied (not
// with outlinks) and the bytes copied before it.
func copyRecords(w io.Writer, r io.Reader, outlinks bool, complete func() bool, index func(*exchange.Member, int64) error, copied func(cursor string)) (int, string, error) {
	n, cursor := 0, ""
	var held []byte
	heldCursor := ""
	var written int64
	write := func(b []byte, c string) error {
		k, err := w.Write(b)
		written += int64(k)
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		n++
		cursor = c
		copied(cursor)
		return nil
	}
	flush := func() error {
		if held == nil {
			return nil
		}
		b := held
		held = nil
		return write(b, heldCursor)
	}
	var req []byte // request records waiting for their response
	err := exchange.Records(r, func(m *exchange.Member) error {
		switch {
		case m.Type() == "warcinfo":
			return nil
		case m.Type() == "request":
			req = append(req, m.Raw...)
			return nil
		case !outlinks:
			off := written + int64(len(req))
			b := append(req, m.Raw...)
			req = req[:0]
			if err := write(b, m.Cursor()); err != nil || index == nil {
				return err
			}
			return index(m, off)
		case m.Type() == "metadata" && held != nil:
			held = append(held, m.Raw...)
			return flush()
		}
		if err := flush(); err != nil {
			return err
		}
		held, heldCursor = append(req, m.Raw...), m.Cursor()
		req = nil
		return nil
	})
	if err == nil && complete() {
		err = flush()
	}
	return n, cursor, err
}

// openGatewayExport asks the node's gateway for /export of the flags'
// selection, in format ("" for WARC), and returns the response once it
// is a 200; the caller closes its body.
func (f *exportFlags) openGatewayExport(ctx context.Context, format string) (*http.Response, error) {
	ep, err := endpoint(f.nodeURL, "/export")
	if err != nil {
		return nil, err
	}
	p := f.params()
	if format != "" {
		p.Set("format", format)
	}
	if f.resume != "" {
		p.Set("after", f.resume)
	}
	if format == "" {
		p.Set("warcinfo", "0") // this command writes its own (warcInfo)
		if f.outlinks {
			p.Set("outlinks", "1")
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+"?"+p.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req) // no overall timeout: exports are long
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("export: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, nil
}
