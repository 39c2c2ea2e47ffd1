package gateway

import (
	"encoding/json"
	"net/http"
	"path"
)

// importPath is the admin endpoint that imports a WARC, WACZ or ARC file.
const importPath = "/api/import"

// ImportLine is one line of the answer to POST /api/import: a record
// not imported (Where, ID, URL, Error), the final report (Report), or
// why the import stopped (Error alone; sending the file again resumes).
type ImportLine struct {
	Where  string `json:"where,omitempty"`
	ID     string `json:"id,omitempty"`
	URL    string `json:"url,omitempty"`
	Error  string `json:"error,omitempty"`
	Report any    `json:"report,omitempty"`
}

// serveImport answers POST /api/import?name=FILE: the body is the file,
// from the operator (the admin token) only (herod import sends it). The
// answer streams as it goes, one JSON object a line: each record not
// imported as it is found, then {"report": …}, or {"error": …} if the
// import stopped. It is bounded by the client going away, not by the
// gateway's deadline; the node keeps the upload in its data directory
// while it imports it.
func (s *Server) serveImport(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Import == nil || s.cfg.AdminToken == "" {
		s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
		return
	}
	if !s.adminAllowed(w, r, "POST a WARC, WACZ or ARC file", "herod import") {
		return
	}
	name := path.Base(r.URL.Query().Get("name"))
	if name == "." || name == "/" {
		name = "upload"
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	fl, _ := w.(http.Flusher)
	started := false
	emit := func(v any) {
		// The answer starts once the upload is read: an HTTP/1 server
		// may close the request body once the response has begun.
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		if err := enc.Encode(v); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	rep, err := s.cfg.Import(r.Context(), name, r.Body, emit)
	if err != nil {
		s.log.Warn("gateway: import stopped", "file", name, "err", err)
		if !started {
			http.Error(w, "gateway: import: "+err.Error(), http.StatusInternalServerError)
			return
		}
		emit(ImportLine{Error: err.Error()})
		return
	}
	emit(ImportLine{Report: rep})
}
