package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node"
)

// formatFlags registers the flags of the converted export formats.
func (f *exportFlags) formatFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.format, "format", gateway.FormatWARC, "output format: warc, wacz (a WACZ 1.1.1 package), links (source, target, day per link) or text (one JSON line of extracted text per HTML version)")
	fs.BoolVar(&f.wacz, "wacz", false, "short for --format wacz")
	fs.BoolVar(&f.sign, "sign", false, "with --wacz --data: sign the package with the node's identity key (through a gateway it is always signed)")
}

// checkFormat validates the format flags.
func (f *exportFlags) checkFormat() error {
	if f.wacz {
		if f.format != gateway.FormatWARC && f.format != gateway.FormatWACZ {
			return errors.New("--wacz contradicts --format " + f.format)
		}
		f.format = gateway.FormatWACZ
	}
	switch f.format {
	case gateway.FormatWARC, gateway.FormatWACZ, gateway.FormatLinks, gateway.FormatText:
	default:
		return fmt.Errorf("--format %q: want warc, wacz, links or text", f.format)
	}
	switch {
	case f.format != gateway.FormatWARC && f.cdx != "":
		return errors.New("--cdx needs --format warc (a WACZ holds its own index)")
	case f.format == gateway.FormatWACZ && f.resume != "":
		return errors.New("a WACZ export cannot resume: run it again whole")
	case f.sign && (f.format != gateway.FormatWACZ || f.data == ""):
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
	if err == nil && f.format == gateway.FormatWACZ && f.out != "-" && emptyWACZ(f.out) {
		err = f.nothingMatched(nil) // through a gateway: the package came whole, and empty
	}
	if err != nil && f.format == gateway.FormatWACZ && f.out != "-" {
		os.Remove(f.out)
	}
	return err
}

// convertDisk exports from the data directory through a pipe into the
// converter.
func (f *exportFlags) convertDisk(ctx context.Context, w io.Writer, stderr io.Writer) error {
	q, err := f.archiveQuery()
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var st archive.ExportStats
	go func() {
		var err error
		st, err = s.Export(ctx, archive.ExportOptions{Query: q, Revisits: f.revisits, After: f.resume, Hide: f.hide}, pw, nil)
		pw.CloseWithError(err)
		done <- err
	}()
	last := ""
	cursor := func(m *exchange.Member) { last = m.Cursor() }
	switch f.format {
	case gateway.FormatLinks:
		var bs exchange.BulkStats
		if bs, err = exchange.Links(pr, w, cursor); err == nil && bs.Versions > 0 {
			fmt.Fprintf(stderr, "exported %d links of %d HTML versions\n", bs.Lines, bs.Versions)
		} else if err == nil {
			err = f.nothingMatched(nil)
		}
	case gateway.FormatText:
		var bs exchange.BulkStats
		if bs, err = exchange.Texts(pr, w, cursor); err == nil && bs.Versions > 0 {
			fmt.Fprintf(stderr, "exported the text of %d HTML versions\n", bs.Versions)
		} else if err == nil {
			err = f.nothingMatched(nil)
		}
	default:
		z := exchange.NewWACZ(w, exchange.WACZOptions{Title: "herod export " + f.selection(), Signer: signer, Info: f.warcInfo(), MainPage: f.mainPage()})
		var zs exchange.WACZStats
		zs, err = z.AddWARC(pr)
		switch {
		case err == nil && zs.Responses+zs.Revisits == 0:
			var hint []string
			if q.Host != "" {
				hint = similarHosts(ctx, s.Store, q.Host)
			}
			err = f.nothingMatched(hint)
		case err == nil:
			err = z.Close()
		}
		if err == nil {
			fmt.Fprintf(stderr, "exported a WACZ of %d responses, %d revisits and %d pages (%d WARC bytes)\n", zs.Responses, zs.Revisits, zs.Pages, zs.WARCBytes)
		}
	}
	pr.CloseWithError(errors.New("converter stopped"))
	cancel()
	if eerr := <-done; err == nil {
		err = eerr
	}
	if err != nil {
		if f.format == gateway.FormatWACZ {
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
// root or the prefix when the archive has a page there (the seed a crawl
// of it starts from); "" leaves the choice to the page captured first.
func (f *exportFlags) mainPage() string {
	q, err := f.archiveQuery()
	switch {
	case err != nil:
		return ""
	case q.URL != "":
		return q.URL
	case q.Prefix != "":
		return q.Prefix
	case q.Host != "":
		return "http://" + q.Host + "/"
	}
	return ""
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
		if f.format == gateway.FormatWACZ {
			return err
		}
		return resumeHint(err, cursor)
	}
	fmt.Fprintf(stderr, "exported %d bytes of %s\n", n, f.format)
	return nil
}
