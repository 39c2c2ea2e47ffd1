package sampleweb

import (
	"bytes"
	"net/http"
	"strings"
	"time"
)

// serve.go is the HTTP face of the web: one handler per host, conditional
// GETs answered with 304, and a record of every request.

// handler serves host h.
func (w *Web) handler(h int) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		d := w.Day()
		bases := w.basesCopy()
		// The request is recorded when its status is committed, before the
		// client can see any of the response, so a client that has read a
		// response finds its request in Requests.
		sw := &statusWriter{ResponseWriter: rw, commit: func(status int) {
			w.record(Request{
				Time:        time.Now(),
				Host:        strings.TrimPrefix(bases[h], "http://"),
				Path:        r.URL.RequestURI(),
				Method:      r.Method,
				UserAgent:   r.UserAgent(),
				From:        r.Header.Get("From"),
				Conditional: r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "",
				Status:      status,
			})
		}}
		defer sw.WriteHeader(http.StatusOK) // records a handler that wrote nothing
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			sw.Header().Set("Allow", "GET, HEAD")
			http.Error(sw, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		res := w.m.lookup(h, r.URL.Path, r.URL.RawQuery, d, bases, true)
		hd := sw.Header()
		hd.Set("Content-Type", res.ctype)
		if res.etag == "" {
			res.etag = etag(res.body)
		}
		hd.Set("ETag", res.etag)
		modtime := w.LastModified(res.lastMod)
		switch res.status {
		case http.StatusOK:
			http.ServeContent(sw, r, "", modtime, bytes.NewReader(res.body))
		case http.StatusMovedPermanently:
			th, p := w.m.target(res.location)
			hd.Set("Location", bases[th]+p)
			writeFixed(sw, r, modtime, res.status, res.body)
		default:
			writeFixed(sw, r, modtime, res.status, res.body)
		}
	})
}

// writeFixed writes a non-200 response, which is never conditional.
func writeFixed(w http.ResponseWriter, r *http.Request, modtime time.Time, status int, body []byte) {
	w.Header().Set("Last-Modified", modtime.UTC().Format(http.TimeFormat))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body) //nolint:errcheck // a client that went away is not our error
	}
}

func (w *Web) record(r Request) {
	if w.cfg.MaxRequests < 0 {
		return
	}
	w.mu.Lock()
	if len(w.reqs) >= w.cfg.MaxRequests {
		keep := w.cfg.MaxRequests / 2
		w.reqs = append(w.reqs[:0:0], w.reqs[len(w.reqs)-keep:]...)
	}
	w.reqs = append(w.reqs, r)
	w.mu.Unlock()
}

// statusWriter calls commit with the status once, when the handler first
// writes a header or body.
type statusWriter struct {
	http.ResponseWriter
	commit func(status int)
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if s.wrote {
		return
	}
	s.wrote = true
	s.commit(code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}
