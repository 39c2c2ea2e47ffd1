package exchange

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// The one export path: herod export (from a data directory) and the
// gateway's /export (ring-wide) both hand Export a Source, which writes
// the selection as a .warc.gz stream, and get back the stream in the
// format asked for: the WARC itself behind its warcinfo record, or a
// WACZ, link graph or text converted on the fly.

// Export formats.
const (
	FormatWARC  = "warc"
	FormatWACZ  = "wacz"
	FormatLinks = "links"
	FormatText  = "text"
)

// Source writes a selection to w as a .warc.gz stream of one record per
// gzip member (archive.Store.Export, or the ring-wide merge) and returns
// its error. It must stop, with an error, once ctx is done.
type Source func(ctx context.Context, w io.Writer) error

// ExportOptions shape an Export. The zero value writes the WARC stream
// without a warcinfo record.
type ExportOptions struct {
	// Format is FormatWARC (or ""), FormatWACZ, FormatLinks or FormatText.
	Format string
	// Info, for the WARC format, is the warcinfo record written before
	// the first record (none when nothing is written); nil writes none,
	// as for a resumed export, which appends to a file that has one.
	Info *WARCInfo
	// WACZ configures the WACZ package.
	WACZ WACZOptions
	// SkipEmptyWACZ leaves unwritten a WACZ that would hold no record
	// (Export writes nothing and reports ExportStats.WACZ's zero counts);
	// by default an empty package is written whole.
	SkipEmptyWACZ bool
	// Outlinks, for the WARC format, adds after each HTML response its
	// metadata record of outlinks (WithOutlinks); Progress is then
	// called by the converter, after a record and its metadata record.
	Outlinks bool
	// Text shapes the text format.
	Text TextOptions
	// Progress, for the links and text formats, is called with the exact
	// resume cursor of each HTML version converted (Member.Cursor), after
	// its lines are written. For the WARC format the Source reports its
	// own progress, unless Outlinks.
	Progress func(cursor string)
}

// ExportStats summarizes an Export.
type ExportStats struct {
	InfoBytes int64        // of the warcinfo record written (WARC)
	Outlinks  OutlinkStats // WARC with Outlinks
	Bulk      BulkStats    // links and text
	WACZ      WACZStats    // WACZ
}

// ErrFormatName reports an export format Export does not know.
var ErrFormatName = errors.New("exchange: unknown export format")

// errConverterDone stops a Source whose converter has finished early.
var errConverterDone = errors.New("exchange: export converter stopped")

// Export writes the stream of src to w in o.Format. A WARC goes straight
// through, behind o.Info; the other formats run src into a pipe and the
// converter on the other end, in two goroutines: src's context ends when
// the converter stops. The converter's error comes first, then src's.
func Export(ctx context.Context, src Source, w io.Writer, o ExportOptions) (ExportStats, error) {
	var st ExportStats
	switch o.Format {
	case "", FormatWARC:
		if !o.Outlinks {
			in := &InfoFirst{W: w, Info: o.Info}
			err := src(ctx, in)
			st.InfoBytes = in.N
			return st, err
		}
		o.Format = FormatWARC
	case FormatWACZ, FormatLinks, FormatText:
	default:
		return st, fmt.Errorf("%w %.20q", ErrFormatName, o.Format)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := src(ctx, pw)
		pw.CloseWithError(err)
		done <- err
	}()
	var cursor func(*Member)
	if o.Progress != nil {
		cursor = func(m *Member) { o.Progress(m.Cursor()) }
	}
	var err error
	switch o.Format {
	case FormatWARC:
		in := &InfoFirst{W: w, Info: o.Info}
		st.Outlinks, err = WithOutlinks(pr, in, cursor)
		st.InfoBytes = in.N
	case FormatLinks:
		st.Bulk, err = Links(pr, w, cursor)
	case FormatText:
		st.Bulk, err = TextsWith(pr, w, cursor, o.Text)
	default:
		z := NewWACZ(w, o.WACZ)
		st.WACZ, err = z.AddWARC(pr)
		if err == nil && (!o.SkipEmptyWACZ || st.WACZ.Responses+st.WACZ.Revisits > 0) {
			err = z.Close()
		}
	}
	pr.CloseWithError(errConverterDone)
	cancel()
	if serr := <-done; err == nil {
		err = serr
	}
	return st, err
}

// InfoFirst writes a warcinfo record before the first bytes written
// through it: a WARC export starts with one, and an export that writes
// nothing writes no warcinfo either (so that it can still fail with a
// plain error, or leave no file). A nil Info writes none.
type InfoFirst struct {
	W    io.Writer
	Info *WARCInfo
	N    int64 // bytes of the warcinfo record written
}

// Write writes the warcinfo record, the first time, then p.
func (i *InfoFirst) Write(p []byte) (int, error) {
	if i.Info != nil {
		n, err := WriteWARCInfo(i.W, *i.Info)
		i.N, i.Info = n, nil
		if err != nil {
			return 0, err
		}
	}
	return i.W.Write(p)
}
