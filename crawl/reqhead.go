package crawl

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"

	"github.com/herod-archive/herod/archive"
)

// Request heads. A stored capture carries the head of the request its
// answer came to (archive.Capture.Request), recorded as the client wrote
// it: the transport reports every header field it writes
// (httptrace.ClientTrace.WroteHeaderField) — Host, User-Agent, From, the
// validators, the Accept-Encoding the transport adds — and the end of the
// head (WroteHeaders). The crawler follows no redirect in the client (a
// redirect is stored and its target queued), so one fetch sends one
// request; a request the transport sends again on a fresh connection
// starts the head over (GotConn). Over HTTP/2 the fields are written
// lower-case after pseudo-header fields: :authority is kept as the host
// field and the other pseudo-headers, which the request line holds, are
// left out; the request line then ends in "HTTP/2.0".

// headRecorder collects one request's head from the transport's trace.
// The transport calls it from its own goroutines, hence the lock.
type headRecorder struct {
	mu   sync.Mutex
	buf  []byte
	done bool // the head's end was written
	over bool // the head is over archive.MaxRequestHead
}

// trace returns ctx with r's hooks on the requests made with it.
func (r *headRecorder) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) {
			r.mu.Lock()
			r.buf, r.done, r.over = r.buf[:0], false, false
			r.mu.Unlock()
		},
		WroteHeaderField: r.field,
		WroteHeaders: func() {
			r.mu.Lock()
			r.done = true
			r.mu.Unlock()
		},
	})
}

// field appends a written header field, one line per value.
func (r *headRecorder) field(name string, values []string) {
	if strings.HasPrefix(name, ":") {
		if name != ":authority" {
			return // the request line holds :method, :path, :scheme
		}
		name = "host"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buf == nil {
		r.buf = make([]byte, 0, 512) // a crawler's head fits
	}
	for _, v := range values {
		r.buf = append(r.buf, name...)
		r.buf = append(r.buf, ": "...)
		r.buf = append(r.buf, v...)
		r.buf = append(r.buf, "\r\n"...)
	}
	if len(r.buf) > archive.MaxRequestHead {
		r.over = true
		r.buf = r.buf[:0]
	}
}

// head returns the request head of req as written, sent over proto
// ("HTTP/1.1", "HTTP/2.0"): nil when the transport did not finish
// writing it or it is over archive.MaxRequestHead.
func (r *headRecorder) head(req *http.Request, proto string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done || r.over {
		return nil
	}
	if proto != "HTTP/2.0" {
		proto = "HTTP/1.1"
	}
	uri := req.URL.RequestURI()
	n := len(req.Method) + len(uri) + len(proto) + 4 + len(r.buf) + 2
	if n > archive.MaxRequestHead {
		return nil
	}
	out := make([]byte, 0, n)
	out = append(out, req.Method...)
	out = append(out, ' ')
	out = append(out, uri...)
	out = append(out, ' ')
	out = append(out, proto...)
	out = append(out, "\r\n"...)
	out = append(out, r.buf...)
	return append(out, "\r\n"...)
}
