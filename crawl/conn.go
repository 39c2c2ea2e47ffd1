package crawl

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The crawler's own HTTP/1.1 connections. A host loop owns at most
// HostConns of them, each used by one fetch at a time and handed from one
// fetch to the next (see runHost). The fetch that holds a connection
// writes its request and reads the response on it from its own goroutine,
// with net/http's request writer and response parser: net/http's Transport
// would pass every exchange through a writer and a reader goroutine of its
// own and the connection pool, four hand-offs that each wait for the
// scheduler (and, on a busy machine, for the kernel) between one response
// and the next request (docs/crawl.md, "Own connections").
//
// What the Transport did and the crawler needs is done here too: dial and
// TLS handshake timeouts, a bound on the response head, transparent gzip
// (Accept-Encoding: gzip is sent unless the request sets its own, and a
// gzipped body is decoded, its Content-Encoding and Content-Length
// dropped, as the Transport does), interim 1xx responses skipped, keep-alive
// with a retry on a fresh connection when a reused one turns out closed
// before any byte of the response arrived, an idle timeout, a bound on the
// connections kept open between requests (hostSlots.keep). Requests that
// must go through a proxy (HTTP_PROXY and friends) and crawlers given a
// Config.Client use that client instead.

const (
	dialTimeout      = 10 * time.Second
	handshakeTimeout = 10 * time.Second
	// idleConnTimeout closes a kept-alive connection not used for this long
	// instead of sending a request on it (servers close theirs sooner or
	// later; a request on a closed connection costs a retry).
	idleConnTimeout = 90 * time.Second
	// maxResponseHead bounds the status line and headers of a response.
	maxResponseHead = 64 << 10
	// maxInterim bounds the 1xx responses skipped before the final one.
	maxInterim = 8
)

// errResponseHead is returned for a response whose head exceeds
// maxResponseHead bytes.
var errResponseHead = fmt.Errorf("crawl: response head over %d bytes", maxResponseHead)

// hostConn is one persistent connection to an origin ("http://host:port").
// It is used by one fetch at a time.
type hostConn struct {
	origin string
	nc     net.Conn
	r      connReader
	br     *bufio.Reader
	bw     *bufio.Writer
	used   time.Time // end of the last exchange
	open   *atomic.Int64
	closed bool
}

// connReader reads from the connection, counting the bytes of the current
// exchange and, while a response head is read, refusing to read more than
// left bytes.
type connReader struct {
	nc      net.Conn
	n       int64 // bytes read since the exchange began
	limited bool  // reading a response head
	left    int64 // bytes the head may still take, when limited
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.limited {
		if r.left <= 0 {
			return 0, errResponseHead
		}
		if int64(len(p)) > r.left {
			p = p[:r.left]
		}
	}
	n, err := r.nc.Read(p)
	r.n += int64(n)
	r.left -= int64(n)
	return n, err
}

// Close closes the connection; later calls do nothing.
func (hc *hostConn) Close() error {
	if hc.closed {
		return nil
	}
	hc.closed = true
	hc.open.Add(-1)
	return hc.nc.Close()
}

// originOf returns the scheme://host:port a request's connection goes to
// and the host:port to dial.
func originOf(req *http.Request) (origin, addr string, err error) {
	if req.URL.Host == "" {
		return "", "", errors.New("crawl: URL without a host")
	}
	port := req.URL.Port()
	switch req.URL.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
	default:
		return "", "", fmt.Errorf("crawl: unsupported scheme %q", req.URL.Scheme)
	}
	addr = net.JoinHostPort(req.URL.Hostname(), port)
	return req.URL.Scheme + "://" + addr, addr, nil
}

// dialConn opens a connection to addr, req's origin (originOf), with a
// TLS handshake for https (HTTP/1.1 only), and counts it in open until it
// is closed. g refuses internal addresses on the resolved address.
func dialConn(ctx context.Context, req *http.Request, origin, addr string, tlsConf *tls.Config, g *guard, open *atomic.Int64) (*hostConn, error) {
	nc, err := g.dialer().DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if req.URL.Scheme == "https" {
		conf := &tls.Config{}
		if tlsConf != nil {
			conf = tlsConf.Clone()
		}
		if conf.ServerName == "" {
			conf.ServerName = req.URL.Hostname()
		}
		conf.NextProtos = []string{"http/1.1"}
		tc := tls.Client(nc, conf)
		hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	open.Add(1)
	hc := &hostConn{origin: origin, nc: nc, open: open}
	hc.r.nc = nc
	hc.br = bufio.NewReaderSize(&hc.r, 4<<10)
	hc.bw = bufio.NewWriterSize(nc, 4<<10)
	return hc, nil
}

// exchange is a response read from a hostConn: its Body reads the
// connection, and finish tells whether the connection may carry the next
// request.
type exchange struct {
	resp *http.Response
	hc   *hostConn
	raw  *eofReader // the body as framed on the wire, before any gzip
	stop func() bool
}

// eofReader remembers whether its reader returned io.EOF.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

// roundTrip sends req on hc (dialling when hc is nil, closed or idle too
// long, or for another origin) and reads the response head. The exchange
// owns the connection until finish. A reused connection that fails before
// any byte of the response arrived is replaced by a fresh one and the
// request sent again once (GET is idempotent), as net/http's Transport
// does. Every connection dialled goes through g. The request's context bounds the whole exchange: when it is done,
// the connection's reads and writes fail.
func roundTrip(req *http.Request, hc *hostConn, tlsConf *tls.Config, g *guard, now time.Time, open *atomic.Int64) (*exchange, error) {
	ctx := req.Context()
	origin, addr, err := originOf(req)
	if err != nil {
		return nil, err
	}
	// Transparent gzip, as net/http's Transport does it: asked for unless
	// the request says what it accepts.
	gz := req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == "" && req.Method != http.MethodHead
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	if hc != nil && (hc.origin != origin || now.Sub(hc.used) > idleConnTimeout || hc.br.Buffered() > 0) {
		hc.Close()
		hc = nil
	}
	for attempt := 0; ; attempt++ {
		fresh := hc == nil
		if fresh {
			if hc, err = dialConn(ctx, req, origin, addr, tlsConf, g, open); err != nil {
				return nil, err
			}
		}
		ex, err := hc.send(req, gz)
		if err == nil {
			return ex, nil
		}
		hc.Close()
		if fresh || attempt > 0 || hc.r.n > 0 || ctx.Err() != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
			}
			return nil, err
		}
		hc = nil // a kept-alive connection the server had closed: once more
	}
}

// send writes req and reads the response head; gz: the request asked for
// gzip on the caller's behalf, so a gzipped body is decoded.
func (hc *hostConn) send(req *http.Request, gz bool) (*exchange, error) {
	ctx := req.Context()
	if d, ok := ctx.Deadline(); ok {
		hc.nc.SetDeadline(d)
	} else {
		hc.nc.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() {
		hc.nc.SetDeadline(time.Unix(1, 0)) // wakes reads and writes in progress
	})
	hc.r.n = 0
	if err := req.Write(hc.bw); err != nil {
		stop()
		return nil, fmt.Errorf("write request: %w", err)
	}
	if err := hc.bw.Flush(); err != nil {
		stop()
		return nil, fmt.Errorf("write request: %w", err)
	}
	var resp *http.Response
	for interim := 0; ; interim++ {
		hc.r.limited, hc.r.left = true, maxResponseHead-int64(hc.br.Buffered())
		var err error
		resp, err = http.ReadResponse(hc.br, req)
		hc.r.limited = false
		if err != nil {
			stop()
			if errors.Is(err, errResponseHead) {
				return nil, errResponseHead
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("read response: %w", err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if interim == maxInterim {
			stop()
			return nil, fmt.Errorf("read response: more than %d interim responses", maxInterim)
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		stop()
		return nil, errors.New("read response: unexpected 101 Switching Protocols")
	}
	raw := &eofReader{r: resp.Body, eof: resp.Body == http.NoBody}
	resp.Body = io.NopCloser(raw)
	if gz && strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
		resp.Body = &gunzipBody{raw: raw}
	}
	return &exchange{resp: resp, hc: hc, raw: raw, stop: stop}, nil
}

// finish ends the exchange and returns its connection for the next
// request, or nil when it cannot carry one (it is then closed).
func (ex *exchange) finish(now time.Time) *hostConn {
	hc := ex.hc
	if !ex.stop() {
		// The request's context ended during the exchange: the
		// connection's deadline was moved to the past.
		hc.Close()
		return nil
	}
	// A gzipped body read to its end was read to the end of its framing
	// too: the decoder looks for a next member until the body's EOF.
	if !ex.raw.eof || ex.resp.Close || hc.br.Buffered() > 0 {
		hc.Close()
		return nil
	}
	hc.used = now
	return hc
}

// gunzipBody decodes a gzipped body, opening the decoder at the first Read.
type gunzipBody struct {
	raw io.Reader
	zr  *gzip.Reader
	err error
}

func (g *gunzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		zr, err := gzip.NewReader(g.raw)
		if err != nil {
			g.err = fmt.Errorf("gzip body: %w", err)
			return 0, g.err
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("gzip body: %w", err)
		g.err = err
	}
	return n, err
}

// Close implements io.Closer; the connection is the exchange's to close.
func (g *gunzipBody) Close() error { return nil }
