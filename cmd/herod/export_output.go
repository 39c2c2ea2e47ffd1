package main

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/exchange"
	"github.com/herod-archive/herod/internal/buildinfo"
)

// lazyFile is an output file created (or, to resume, opened for appending)
// on its first write, so that an export that matches nothing leaves no
// empty file behind.
type lazyFile struct {
	path   string
	append bool
	f      *os.File
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if l.append {
			flags = os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(l.path, flags, 0o644)
		if err != nil {
			return 0, fmt.Errorf("output: %w", err)
		}
		l.f = f
	}
	return l.f.Write(p)
}

// Close syncs and closes the file if it was created.
func (l *lazyFile) Close() error {
	if l.f == nil {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		l.f.Close()
		return fmt.Errorf("output: %w", err)
	}
	return l.f.Close()
}

// cdxOffset matches the offset field of a CDXJ line's JSON block: inside
// a JSON string a quote is escaped, so the pattern cannot match a URL.
var cdxOffset = regexp.MustCompile(`"offset":"?(\d+)`)

// shiftOffsets writes CDXJ lines to w with their offsets moved by by()
// bytes: the archive counts them from its first record, which the
// warcinfo record now precedes.
type shiftOffsets struct {
	w    io.Writer
	by   func() int64
	part []byte
}

func (s *shiftOffsets) Write(p []byte) (int, error) {
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := s.part[:i+1]
		if loc := cdxOffset.FindSubmatchIndex(line); loc != nil {
			off, _ := strconv.ParseInt(string(line[loc[2]:loc[3]]), 10, 64)
			line = append(append(append([]byte{}, line[:loc[2]]...), strconv.FormatInt(off+s.by(), 10)...), line[loc[3]:]...)
		}
		if _, err := s.w.Write(line); err != nil {
			return 0, err
		}
		s.part = s.part[i+1:]
	}
}

// formatOfName returns the format an output file name implies: wacz for
// .wacz or .zip, warc for .warc.gz, .warc or .gz, links for .tsv, text
// for .jsonl; "" for any other name.
func formatOfName(name string) string {
	n := strings.ToLower(name)
	for _, e := range []struct{ ext, format string }{
		{".wacz", exchange.FormatWACZ}, {".zip", exchange.FormatWACZ},
		{".warc.gz", exchange.FormatWARC}, {".warc", exchange.FormatWARC}, {".gz", exchange.FormatWARC},
		{".tsv", exchange.FormatLinks}, {".jsonl", exchange.FormatText},
	} {
		if strings.HasSuffix(n, e.ext) {
			return e.format
		}
	}
	return ""
}

// extOf is the file name extension of each format.
var extOf = map[string]string{exchange.FormatWARC: ".warc.gz", exchange.FormatWACZ: ".wacz", exchange.FormatLinks: ".tsv", exchange.FormatText: ".jsonl"}

// checkName takes the format from -o's name when no format flag was
// given (x.wacz is a WACZ) and refuses a name that says another format
// than the one written (--wacz -o x.warc.gz); a name without a known
// extension is taken as it is.
func (f *exportFlags) checkName(formatGiven bool) error {
	if f.out == "-" {
		return nil
	}
	byName := formatOfName(f.out)
	if !formatGiven && byName != "" {
		f.format = byName
	}
	switch {
	case f.format == exchange.FormatWARC && strings.HasSuffix(strings.ToLower(f.out), ".warc"):
		return fmt.Errorf("-o %s: a WARC export is gzip-compressed: name the file %s.gz", f.out, f.out)
	case byName == "" || byName == f.format:
		return nil
	case f.format == exchange.FormatWACZ:
		return fmt.Errorf("-o %s: --wacz writes a WACZ (a zip), not a %s: name the file %s", f.out, byName, swapExt(f.out, ".wacz"))
	}
	return fmt.Errorf("-o %s: --format %s writes a %s file, not a %s: name the file %s", f.out, f.format, f.format, byName, swapExt(f.out, extOf[f.format]))
}

// swapExt replaces name's archive extension (.warc.gz, .warc, .wacz, .gz
// or the last) with ext.
func swapExt(name, ext string) string {
	lower := strings.ToLower(name)
	for _, e := range []string{".warc.gz", ".warc", ".wacz", ".gz", ".zip", ".tsv", ".jsonl"} {
		if strings.HasSuffix(lower, e) {
			return name[:len(name)-len(e)] + ext
		}
	}
	if i := strings.LastIndexByte(name, '.'); i > strings.LastIndexByte(name, '/') && i > 0 {
		return name[:i] + ext
	}
	return name + ext
}

// binary reports whether the format is a binary file (gzip or zip).
func (f *exportFlags) binary() bool {
	return f.format == exchange.FormatWARC || f.format == exchange.FormatWACZ
}

// selection is the export's selection as flags: "--host example.com
// --from 20260101".
func (f *exportFlags) selection() string {
	var parts []string
	for _, p := range [][2]string{{"host", f.host}, {"prefix", f.prefix}, {"url", f.url}, {"from", f.from}, {"to", f.to}} {
		if p[1] != "" {
			parts = append(parts, "--"+p[0]+" "+p[1])
		}
	}
	for _, k := range []string{"domain", "surt", "regex", "type", "status", "sample", "part"} {
		if v := f.sel[k]; v != nil && *v != "" {
			parts = append(parts, "--"+k+" "+*v)
		}
	}
	for _, b := range []struct {
		name string
		set  bool
	}{{"all", f.all}, {"latest", f.latest}} {
		if b.set {
			parts = append(parts, "--"+b.name)
		}
	}
	return strings.Join(parts, " ")
}

// warcInfo is the warcinfo record of this export, nil when resuming (the
// file already starts with one).
func (f *exportFlags) warcInfo() *exchange.WARCInfo {
	if f.resume != "" {
		return nil
	}
	name := ""
	if f.out != "-" {
		name = baseName(f.out)
	}
	from := "the archive in " + f.data
	if f.nodeURL != "" {
		from = "the ring, through " + f.nodeURL
	}
	desc := "captures selected by " + f.selection() + ", from " + from
	if f.revisits {
		desc += ", with revisit records for the days a page was checked unchanged"
	}
	return &exchange.WARCInfo{Filename: name, Software: "herod " + buildinfo.Read().Version + " (" + buildinfo.Read().Short() + ")",
		Operator: f.operator, IsPartOf: "herod export " + f.selection(), Description: desc}
}

// baseName is the last element of a slash-separated path.
func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// errNothing reports an export that matched nothing; no file was written.
var errNothing = errors.New("nothing matched")

// nothingMatched is the error of an export that matched nothing, with the
// hosts that look like the one asked for (hint, from the archive).
func (f *exportFlags) nothingMatched(hint []string) error {
	where := "in the archive in " + f.data
	if f.nodeURL != "" {
		where = "ring-wide"
	}
	written := "nothing was written"
	if f.out != "-" && f.resume == "" {
		written = "no file was written"
	}
	msg := fmt.Sprintf("%s %s: %s", f.selection(), where, written)
	switch {
	case len(hint) > 0:
		return fmt.Errorf("%w %s; the archive has %s: try --host %s", errNothing, msg, strings.Join(hint, ", "), hint[0])
	case f.host != "" && !strings.Contains(f.host, ":"):
		return fmt.Errorf("%w %s; a host served on another port is named with it, like --host %s:8080", errNothing, msg, f.host)
	}
	return fmt.Errorf("%w %s", errNothing, msg)
}

// similarHosts returns the archive's hosts that share --host's name with
// another port or a www. prefix, looked for within a few seconds.
func similarHosts(ctx context.Context, s *archive.Store, host string) []string {
	want := strings.TrimPrefix(strings.ToLower(hostName(host)), "www.")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	seen := map[string]bool{}
	last := ""
	s.URLs(ctx, archive.Query{}, func(u string) error {
		h := urlHost(u)
		if h == last {
			return nil
		}
		last = h
		if strings.TrimPrefix(strings.ToLower(hostName(h)), "www.") == want && !strings.EqualFold(h, host) {
			seen[h] = true
		}
		if len(seen) >= 5 {
			return errStop
		}
		return nil
	})
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

var errStop = errors.New("stop")

// urlHost is the host[:port] of an absolute URL.
func urlHost(u string) string {
	_, rest, _ := strings.Cut(u, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// hostName is host without its port.
func hostName(host string) string {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		return host[:i]
	}
	return host
}

// emptyWACZ reports whether the WACZ file at path indexes no record.
func emptyWACZ(path string) bool {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return false
	}
	defer zr.Close()
	for _, e := range zr.File {
		if e.Name == exchange.IndexPath {
			return e.UncompressedSize64 == 0
		}
	}
	return false
}
