package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node"
)

// formatFlags registers the flags of the converted export formats.
func (f *exportFlags) formatFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.format, "format", exchange.FormatWARC, "output format: warc, wacz (a WACZ 1.1.1 package), links (source, target, day per link) or text (one JSON line of extracted text per HTML version)")
	fs.BoolVar(&f.wacz, "wacz", false, "short for --format wacz")
	fs.BoolVar(&f.sign, "sign", false, "with --wacz --data: sign the package with the node's identity key (through a gateway it is always signed)")
}

// checkFormat validates the format flags.
func (f *exportFlags) checkFormat() error {
	if f.wacz {
		if f.format != exchange.FormatWARC && f.format != exchange.FormatWACZ {
			return errors.New("--wacz contradicts --format " + f.format)
		}
		f.format = exchange.FormatWACZ
	}
	switch f.format {
	case exchange.FormatWARC, exchange.FormatWACZ, exchange.FormatLinks, exchange.FormatText:
	default:
		return fmt.Errorf("--format %q: want warc, wacz, links or text", f.format)
	}
	switch {
	case f.format != exchange.FormatWARC && f.cdx != "":
		return errors.New("--cdx needs --format warc (a WACZ holds its own index)")
	case f.format == exchange.FormatWACZ && f.resume != "":
		return errors.New("a WACZ export cannot resume: run it again whole")
	case f.sign && (f.format != exchange.FormatWACZ || f.data == ""):
		return errors.New("--sign needs --wacz and --data")
	}
	return nil
}

// convert writes a wacz, links or text export to -o. A WACZ that could
// not be completed is removed: a partial zip is of no use.
func (f *exportFlags) convert(ctx context.Context, stdout, stderr io.Writer) error {
	w, closeOut, err := f.openOutput(stdout)
	if err != nil {
		return err
	}
	if f.data != "" {
		err = f.convertDisk(ctx, w, stderr)
	} else {
		err = f.convertGateway(ctx, w, stderr)
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err == nil && f.format == exchange.FormatWACZ && f.out != "-" && emptyWACZ(f.out) {
		err = f.nothingMatched(nil) // through a gateway: the package came whole, and empty
	}
	if err != nil && f.format == exchange.FormatWACZ && f.out != "-" {
		os.Remove(f.out)
	}
	return err
}

// convertDisk exports from the data directory through the converter
// (exchange.Export, as the gateway's /export).
func (f *exportFlags) convertDisk(ctx context.Context, w io.Writer, stderr io.Writer) error {
	q, err := f.query()
	if err != nil {
		return err
	}
	var signer archive.Signer
	if f.sign {
		if signer, err = node.DataDirSigner(f.data); err != nil {
			return err
		}
	}
	s, err := f.openArchive(stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	last := ""
	var st archive.ExportStats
	src := func(ctx context.Context, w io.Writer) error {
		var err error
		st, err = s.Export(ctx, archive.ExportOptions{Query: q.Store(), Revisits: q.Revisits, After: f.resume, Hide: f.hide}, w, nil)
		return err
	}
	xs, err := exchange.Export(ctx, src, w, exchange.ExportOptions{Format: f.format, SkipEmptyWACZ: true, Text: exchange.TextOptions{ErrorPages: q.Status >= 400},
		WACZ: exchange.WACZOptions{Title: "herod export " + f.selection(), Signer: signer, Info: f.warcInfo(), MainPage: f.mainPage(),
			Screenshot: exchange.ScreenshotsOf(ctx, s.Store)},
		Progress: func(c string) { last = c }})
	switch {
	case err != nil:
	case f.format == exchange.FormatWACZ && xs.WACZ.Responses+xs.WACZ.Revisits == 0:
		var hint []string
		if q.Match == cdx.MatchHost {
			hint = similarHosts(ctx, s.Store, q.URL)
		}
		err = f.nothingMatched(hint)
	case f.format == exchange.FormatWACZ:
		fmt.Fprintf(stderr, "exported a WACZ of %d responses, %d revisits and %d pages (%d WARC bytes)\n", xs.WACZ.Responses, xs.WACZ.Revisits, xs.WACZ.Pages, xs.WACZ.WARCBytes)
	case xs.Bulk.Versions == 0:
		err = f.nothingMatched(nil)
	case f.format == exchange.FormatLinks:
		fmt.Fprintf(stderr, "exported %d links of %d HTML versions\n", xs.Bulk.Lines, xs.Bulk.Versions)
	default:
		fmt.Fprintf(stderr, "exported the text of %d HTML versions\n", xs.Bulk.Versions)
	}
	if err != nil {
		if f.format == exchange.FormatWACZ {
			return err
		}
		return resumeHint(err, last)
	}
	if len(st.Corrupt) > 0 {
		return fmt.Errorf("skipped %d corrupt version files (first: %s); run herod fsck --repair", len(st.Corrupt), st.Corrupt[0])
	}
	return nil
}

// mainPage is the WACZ's main page: the URL selected, else the host's
// (or domain's) root or the prefix when the archive has a page there (the seed a crawl
// of it starts from); "" leaves the choice to the page captured first.
func (f *exportFlags) mainPage() string {
	q, err := f.query()
	switch {
	case err != nil:
		return ""
	case q.Match == cdx.MatchHost, q.Match == cdx.MatchDomain:
		return "http://" + q.URL + "/"
	case q.Match == cdx.MatchSURT, q.Match == cdx.MatchAll:
		return ""
	}
	return q.URL
}

// convertGateway asks the gateway for the converted stream and copies it.
func (f *exportFlags) convertGateway(ctx context.Context, w io.Writer, stderr io.Writer) error {
	resp, err := f.openGatewayExport(ctx, f.format)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	cursor := resp.Trailer.Get(gateway.TrailerExportCursor)
	if err == nil && n == 0 && resp.Trailer.Get(gateway.TrailerExportStatus) == "complete" {
		return f.nothingMatched(nil)
	}
	if err == nil && resp.Trailer.Get(gateway.TrailerExportStatus) != "complete" {
		msg := resp.Trailer.Get(gateway.TrailerExportError)
		if msg == "" {
			msg = "the stream ended without its completion trailer"
		}
		err = fmt.Errorf("export incomplete: %s", msg)
	}
	if err != nil {
		if f.format == exchange.FormatWACZ {
			return err
		}
		return resumeHint(err, cursor)
	}
	fmt.Fprintf(stderr, "exported %d bytes of %s\n", n, f.format)
	return nil
}
