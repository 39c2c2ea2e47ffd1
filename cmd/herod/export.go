package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/gateway"
	"github.com/herod-archive/herod/node"
)

// exportFlags are the flags of herod export.
type exportFlags struct {
	data, nodeURL     string
	host, prefix, url string
	from, to          string
	// the other selection flags, named as /export's parameters
	// (gateway.ParseExportQuery): domain, surt, regex, type, status,
	// sample, part, and all and latest ("1" when set)
	sel               map[string]*string
	all, latest       bool
	out, cdx, resume  string
	revisits, verbose bool
	outlinks          bool // metadata records of each HTML response's outlinks
	day               time.Duration
	format            string // "" or warc, wacz, links, text (export_formats.go)
	wacz, sign        bool
	operator          string                             // the warcinfo record's operator
	hide              func(url string, t time.Time) bool // access rules of --data (openArchive; access.go)
}

// exportCmd writes WARC (and, from disk, CDXJ) for a host, URL prefix or
// URL, optionally within a date range, either from a node's data directory
// (--data: the node must not be running, since its index is locked while
// it runs) or ring-wide through a gateway's /export stream (--node).
//
// Only complete records reach the output file, so after an interruption
// the file is a valid .warc.gz and the command prints the cursor to pass
// to --resume, which appends the rest to the same file.
func exportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("export", "export (--data DIR | --node URL) (--host H | --prefix URL | --url URL | --domain D | --surt S | --all) [filters] [-o out.warc.gz] [flags]", stderr)
	var f exportFlags
	fs.StringVar(&f.data, "data", "", "export this node's own archive from its data directory (the node must be stopped)")
	fs.StringVar(&f.nodeURL, "node", "", "export ring-wide through this gateway URL, e.g. "+defaultNode)
	fs.StringVar(&f.host, "host", "", "select every URL of this host (e.g. example.com or example.com:8080)")
	fs.StringVar(&f.prefix, "prefix", "", "select the URLs starting with this URL prefix")
	fs.StringVar(&f.url, "url", "", "select this one URL")
	f.sel = map[string]*string{}
	for _, fl := range [][2]string{
		{"domain", "select every URL of this host and its subdomains"},
		{"surt", "select the URLs whose SURT key starts with this, e.g. 'com,example)/docs' or 'com,example,' (the subdomains)"},
		{"regex", "keep the URLs this regular expression (RE2) matches whole"},
		{"type", "keep the versions of this media type, e.g. text/html, or image/* for any image"},
		{"status", "keep the versions answered with this HTTP status"},
		{"sample", "keep this share of URLs, chosen by URL hash (the same on every run): 1% or 0.01"},
		{"part", "keep part I of N disjoint parts of the selection (by ring key), e.g. 1/4: N workers each take one"},
	} {
		f.sel[fl[0]] = fs.String(fl[0], "", fl[1])
	}
	fs.BoolVar(&f.all, "all", false, "select the whole archive")
	fs.BoolVar(&f.latest, "latest", false, "keep only the newest version of each URL")
	fs.StringVar(&f.from, "from", "", "earliest capture, YYYYMMDD[hhmmss] (UTC)")
	fs.StringVar(&f.to, "to", "", "latest capture, YYYYMMDD[hhmmss] (UTC), inclusive")
	fs.StringVar(&f.out, "o", "-", "output file, named for its format (x.warc.gz, x.wacz: the format follows the name unless --format or --wacz is given); - is standard output, refused for a WARC or WACZ on a terminal")
	fs.StringVar(&f.cdx, "cdx", "", "also write a CDXJ index of the output WARC to this file")
	fs.StringVar(&f.resume, "resume", "", "resume after this cursor (printed by an interrupted export), appending to -o")
	fs.BoolVar(&f.revisits, "revisits", false, "add revisit records for days a page was checked unchanged")
	fs.BoolVar(&f.outlinks, "outlinks", false, "add after each HTML response a metadata record listing its outlinks (WARC only)")
	durationVar(fs, &f.day, "day", node.DefaultDayLength, "crawl day length the node runs with (--data only)")
	fs.StringVar(&f.operator, "operator", os.Getenv("HEROD_CONTACT"), "who made the export, a contact URL or e-mail, for the WARC's warcinfo record (default: $HEROD_CONTACT)")
	fs.BoolVar(&f.verbose, "v", false, "verbose logs")
	f.formatFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	formatGiven := false
	fs.Visit(func(fl *flag.Flag) { formatGiven = formatGiven || fl.Name == "format" || fl.Name == "wacz" })
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "herod export: unexpected argument %q: select with --host, --prefix, --url, --domain, --surt or --all; run `herod export --help` for the flags\n", fs.Arg(0))
		return errUsage
	}
	if err := f.check(formatGiven); err != nil {
		fmt.Fprintf(stderr, "herod export: %v\n", err)
		return errUsage
	}
	if f.out == "-" && f.binary() && isTerminal(stdout) {
		return fmt.Errorf("refusing to write a %s (binary) to the terminal: give -o FILE%s, or redirect the output to a file or a pipe",
			strings.ToUpper(f.format), extOf[f.format])
	}
	if f.format != exchange.FormatWARC {
		return f.convert(ctx, stdout, stderr)
	}
	w, closeOut, err := f.openOutput(stdout)
	if err != nil {
		return err
	}
	if f.data != "" {
		err = f.fromDisk(ctx, w, stderr)
	} else {
		err = f.fromGateway(ctx, w, stderr)
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return err
}

// check validates the combination of flags; formatGiven says whether
// --format or --wacz was, else the format follows -o's name.
func (f *exportFlags) check(formatGiven bool) error {
	n := 0
	for _, s := range []string{f.host, f.prefix, f.url, f.selVal("domain"), f.selVal("surt")} {
		if s != "" {
			n++
		}
	}
	if f.all {
		n++
	}
	switch {
	case (f.data == "") == (f.nodeURL == ""):
		return errors.New("give exactly one of --data and --node")
	case n != 1:
		return errors.New("give exactly one of --host, --prefix, --url, --domain, --surt and --all")
	case f.outlinks && f.cdx != "":
		return errors.New("--outlinks cannot be combined with --cdx: the index lists the captures, not the metadata records between them")
	case f.outlinks && f.format != "" && f.format != exchange.FormatWARC:
		return fmt.Errorf("--outlinks adds metadata records to a WARC: --format %s has none", f.format)
	case f.cdx != "" && f.resume != "":
		return errors.New("--cdx cannot be combined with --resume: the offsets would not match the appended file")
	case f.resume != "" && f.out == "-":
		return errors.New("--resume appends to the -o file of the interrupted export")
	}
	if err := f.checkFormat(); err != nil {
		return err
	}
	if err := f.checkName(formatGiven); err != nil {
		return err
	}
	if f.resume != "" {
		if _, _, err := gateway.ParseCursor(f.resume); err != nil {
			return fmt.Errorf("--resume: %w", err)
		}
	}
	for _, ts := range []string{f.from, f.to} {
		if ts != "" {
			if _, err := gateway.ParseTimestamp(ts); err != nil {
				return fmt.Errorf("date %q: %w", ts, err)
			}
		}
	}
	if _, err := f.query(); err != nil {
		return err
	}
	return nil
}

// selVal is the value of selection flag k, "" if unset.
func (f *exportFlags) selVal(k string) string {
	if v := f.sel[k]; v != nil {
		return *v
	}
	return ""
}

// openOutput opens -o: standard output, or a file created on the first
// write (appended to with --resume), so that an export that matches
// nothing leaves no empty file.
func (f *exportFlags) openOutput(stdout io.Writer) (io.Writer, func() error, error) {
	if f.out == "-" {
		return stdout, func() error { return nil }, nil
	}
	if f.resume != "" {
		if _, err := os.Stat(f.out); err != nil {
			return nil, nil, fmt.Errorf("output: %w (--resume appends to the file of the interrupted export)", err)
		}
	}
	lf := &lazyFile{path: f.out, append: f.resume != ""}
	return lf, lf.Close, nil
}

// query builds the selection from the flags, in canonical form: the
// flags are /export's parameters, read as the gateway reads them.
func (f *exportFlags) query() (cdx.Query, error) {
	q, err := gateway.ParseExportQuery(f.params())
	if err != nil {
		return q, fmt.Errorf("selection: %w", err)
	}
	q.Revisits = f.revisits
	return q, nil
}

// params are the /export parameters of the flags' selection.
func (f *exportFlags) params() url.Values {
	p := url.Values{}
	for k, v := range map[string]string{"host": f.host, "prefix": f.prefix, "url": f.url, "from": f.from, "to": f.to} {
		if v != "" {
			p.Set(k, v)
		}
	}
	for k, v := range f.sel {
		if *v != "" {
			p.Set(k, *v)
		}
	}
	if f.all {
		p.Set("all", "1")
	}
	if f.latest {
		p.Set("latest", "1")
	}
	if f.revisits {
		p.Set("revisits", "1")
	}
	return p
}

// openArchive opens the archive in the node's data directory, which the
// node must not be running on; the store's Close releases the directory.
func (f *exportFlags) openArchive(stderr io.Writer) (*lockedStore, error) {
	dir := filepath.Join(f.data, "archive")
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--data %s: no archive: %w", f.data, err)
	}
	lock, err := node.LockDataDir(f.data)
	if err != nil {
		return nil, fmt.Errorf("%w (stop it, or export ring-wide through its gateway with --node)", err)
	}
	hide, err := diskHide(f.data) // access.go
	if err != nil {
		lock.Close()
		return nil, err
	}
	f.hide = hide
	s, err := archive.Open(dir, archive.Options{DayLength: f.day, Logger: logger(stderr, f.verbose)})
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("%w (is the node still running?)", err)
	}
	return &lockedStore{s, lock}, nil
}

// lockedStore is a stopped node's archive opened with its data
// directory's lock held.
type lockedStore struct {
	*archive.Store
	lock io.Closer
}

func (s *lockedStore) Close() error {
	err := s.Store.Close()
	s.lock.Close()
	return err
}

// fromDisk exports from the archive in the node's data directory.
func (f *exportFlags) fromDisk(ctx context.Context, w io.Writer, stderr io.Writer) error {
	q, err := f.query()
	if err != nil {
		return err
	}
	s, err := f.openArchive(stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	// The warcinfo record goes first, before the first record the
	// archive writes; the CDXJ offsets the archive counts from its first
	// record move by its length.
	info := &exchange.InfoFirst{W: w, Info: f.warcInfo()}
	var index io.Writer
	var cdxFile *lazyFile
	if f.cdx != "" {
		cdxFile = &lazyFile{path: f.cdx}
		defer cdxFile.Close()
		index = &shiftOffsets{w: cdxFile, by: func() int64 { return info.N }}
	}
	name := f.warcName()
	prog := newProgress(stderr, "export")
	opts := archive.ExportOptions{Query: q.Store(), Revisits: q.Revisits, Filename: name, After: f.resume, Hide: f.hide,
		Progress: func(cursor string) { prog.add(1, 0, cursor) }}
	var st archive.ExportStats
	if f.outlinks {
		// The converter reports progress, after a record and its metadata.
		last := f.resume
		progress := opts.Progress
		opts.Progress = nil
		src := func(ctx context.Context, w io.Writer) error {
			var err error
			st, err = s.Export(ctx, opts, w, nil)
			return err
		}
		_, err = exchange.Export(ctx, src, countingWriter{info, prog}, exchange.ExportOptions{Outlinks: true,
			Progress: func(c string) { last = c; progress(c) }})
		st.Cursor = last
	} else {
		st, err = s.Export(ctx, opts, countingWriter{info, prog}, index)
	}
	prog.done()
	if err != nil {
		return resumeHint(err, st.Cursor)
	}
	if st.Responses+st.Revisits == 0 && len(st.Corrupt) == 0 {
		var hint []string
		if q.Match == cdx.MatchHost {
			hint = similarHosts(ctx, s.Store, q.URL)
		}
		return f.nothingMatched(hint)
	}
	if cdxFile != nil {
		if err := cdxFile.Close(); err != nil {
			return fmt.Errorf("cdx: %w", err)
		}
	}
	fmt.Fprintf(stderr, "exported %d responses and %d revisits (%d bytes)\n", st.Responses, st.Revisits, st.Bytes+info.N)
	if len(st.Corrupt) > 0 {
		return fmt.Errorf("skipped %d corrupt version files (first: %s); run herod fsck --repair", len(st.Corrupt), st.Corrupt[0])
	}
	return nil
}

// warcName is the WARC file's name that CDXJ lines give.
func (f *exportFlags) warcName() string {
	if f.out == "-" {
		return "herod.warc.gz"
	}
	return filepath.Base(f.out)
}

// resumeHint adds to err how to resume after cursor.
func resumeHint(err error, cursor string) error {
	if cursor == "" {
		return err
	}
	return fmt.Errorf("%w\nthe output holds complete records up to cursor %q; resume with --resume %q", err, cursor, cursor)
}
