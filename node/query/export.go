package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/internal/wire"
	"github.com/herod-archive/herod/node/export"
	"github.com/herod-archive/herod/ring"
)

// The ring-wide export: package export frames, checks and merges the
// members' replies; a Service answers op "export" of the query protocol
// from its store and opens one reply per real node of the ring.

// deadlineWriter extends the write deadline of a stream before each write,
// so a long export is bounded per frame, not as a whole.
type deadlineWriter struct{ s network.Stream }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	_ = w.s.SetWriteDeadline(time.Now().Add(exportIdle))
	return w.s.Write(p)
}

// serveExport answers op "export" from the local store, writing the reply
// frames to w.
func (svc *Service) serveExport(ctx context.Context, req Request, w io.Writer) error {
	if _, err := cdx.FromStore(req.Query); err != nil {
		return export.WriteError(w, err)
	}
	return export.Serve(ctx, svc.Store, archive.ExportOptions{Query: req.Query, Revisits: req.Revisits, After: req.After, Dated: true,
		Hide: svc.hidden()}, w)
}

// openExport starts member c's export of q after the cursor after and
// reads its first record. For this node it runs the export in a goroutine
// feeding a pipe, so both cases share the checks of memberExport. The
// returned stop function releases the stream and must be called.
func (svc *Service) openExport(ctx context.Context, c ring.Contact, q cdx.Query, req Request, after *archive.Cursor, view *holderView) (*export.Member, func(), error) {
	var (
		m     *export.Member
		stop  func()
		name  = c.Addr
		r     io.Reader
		setRD func(time.Time)
	)
	if c.Peer == svc.Self.Peer {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			pw.CloseWithError(svc.serveExport(ctx, req, pw))
		}()
		stop = func() {
			pr.CloseWithError(errExportStopped)
			<-done
		}
		name, r = "self", pr
	} else {
		s, err := svc.Open(ctx, c, Protocol)
		if err != nil {
			return nil, func() {}, fmt.Errorf("member %s: %w", c.Addr, err)
		}
		stop = func() {
			if m != nil && m.Done() {
				_ = s.Close()
			} else {
				_ = s.Reset()
			}
		}
		_ = s.SetDeadline(time.Time{})
		_ = s.SetWriteDeadline(time.Now().Add(streamTimeout))
		if err := wire.WriteJSON(s, req); err != nil {
			return nil, stop, fmt.Errorf("member %s: export request: %w", c.Addr, err)
		}
		_ = s.CloseWrite()
		r = s
		setRD = func(t time.Time) { _ = s.SetReadDeadline(t) }
	}
	var verify export.Verifier
	if c.Peer != svc.Self.Peer {
		// A remote member's records pass the import check, and come from
		// a holder of their URL.
		verify = &heldVerifier{ctx: ctx, inner: svc.Store, peer: c.Peer, view: view}
	}
	var err error
	if m, err = export.Open(name, r, setRD, q, after, verify); err != nil {
		return nil, stop, err
	}
	return m, stop, nil
}

// heldVerifier is the Verifier of a remote member's export: a record
// must pass the import check (inner) and its member must hold its URL
// (holders.go). The records of a member that does not are left out and
// counted in Service.NotHeld (not in Dropped): a holder's stream, or
// this node's, carries the same version if the ring has it, and the
// merge writes it once. A holder lookup that fails leaves the record
// out too, counted in Dropped with the lookup's error.
type heldVerifier struct {
	ctx   context.Context
	inner export.Verifier
	peer  string
	view  *holderView
}

// errNotHolder is the reason a record of a member that does not hold its
// URL is left out of an export.
var errNotHolder = errors.New("node: member does not hold the URL")

// VerifyRecord implements export.Verifier.
func (v *heldVerifier) VerifyRecord(data []byte) (*archive.Capture, id.ID, error) {
	c, digest, err := v.inner.VerifyRecord(data)
	if err != nil {
		return c, digest, err
	}
	ok, err := v.view.holds(v.ctx, v.peer, id.OfString(c.URL))
	switch {
	case err != nil:
		return nil, id.ID{}, err
	case !ok:
		v.view.notHeld.Add(1)
		return nil, id.ID{}, errNotHolder
	}
	return c, digest, nil
}

// errExportStopped ends a local member's export when the merge stops.
var errExportStopped = errors.New("node: export stopped")

// Export implements the gateway's Exporter; see ExportProgress.
func (svc *Service) Export(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string) error {
	return svc.ExportProgress(ctx, q, w, resumeAfter, nil)
}

// ExportProgress implements the gateway's ProgressExporter. It opens an export
// stream to every real node of the ring (this one included), each sorted
// in the archive's export order (host, URL, capture time, digest), and
// merges them into one .warc.gz in that global order, dropping a record
// equal to the one just written (a replica). Every record is checked
// before it is written (see export.Member); another member's records
// must pass this node's import check (the fetcher's signature, the purge
// book) and come from a holder of their URL (holders.go), and those that
// fail are left out and logged. After each record it calls
// progress, if non-nil, with the record's exact cursor; resuming after it
// gives exactly the rest of the stream, since every member skips up to
// the same cursor in the same order.
//
// Partial failure is never silent: if the ring cannot be enumerated
// completely, or a member cannot be reached, fails, or breaks the
// protocol, ExportProgress stops and returns an error naming the member
// (wrapping ErrPartial). What was written before is a correct prefix of
// the full export, so the gateway ends the response with its
// Herod-Export-Status "error" trailer (or a 502 if nothing was written)
// and the client resumes from the last cursor once the member is back.
func (svc *Service) ExportProgress(ctx context.Context, q cdx.Query, w io.Writer, resumeAfter string, progress func(cursor string)) error {
	req := Request{Op: "export", Query: q.Store(), After: resumeAfter, Revisits: q.Revisits}
	if _, err := cdx.FromStore(req.Query); err != nil {
		return fmt.Errorf("node export: %w", err)
	}
	var after *archive.Cursor
	if resumeAfter != "" {
		k, err := archive.ParseCursor(resumeAfter)
		if err != nil {
			return fmt.Errorf("node export: %w", err)
		}
		after = &k
	}
	ms, err := svc.Members(ctx)
	if err != nil {
		return fmt.Errorf("node export: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	view := svc.holderView()
	var (
		mu     sync.Mutex
		opened []*export.Member
		stops  []func()
		errs   []error
		wg     sync.WaitGroup
		sem    = make(chan struct{}, queryFanout)
	)
	defer func() {
		cancel()
		for _, stop := range stops {
			stop()
		}
	}()
	for _, c := range ms {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m, stop, err := svc.openExport(ctx, c, q, req, after, view)
			mu.Lock()
			defer mu.Unlock()
			stops = append(stops, stop)
			switch {
			case err != nil:
				errs = append(errs, err)
			default:
				opened = append(opened, m)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("node export: %w: %w", ErrPartial, errors.Join(errs...))
	}
	err = export.Merge(opened, w, progress)
	nh := view.notHeld.Load()
	if n, why := export.Dropped(opened); n > int(nh) {
		svc.dropped.Add(int64(n) - nh)
		svc.Log().Warn("export: records failed verification, left out", "dropped", int64(n)-nh, "first", why)
	}
	if nh > 0 {
		svc.notHeld.Add(nh)
		svc.Log().Warn("export: records of members not holding their URL, left out", "records", nh)
	}
	if err != nil {
		if errors.Is(err, export.ErrPartial) {
			return fmt.Errorf("node export: %w: %w", ErrPartial, err)
		}
		return fmt.Errorf("node export: %w", err)
	}
	return nil
}
