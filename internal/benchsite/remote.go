package benchsite

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Control paths of ControlHandler.
const (
	controlRecord   = "/record"
	controlDistinct = "/distinct"
	controlReset    = "/reset"
)

// ControlHandler serves s's recorder to another process, on a listener of
// its own so that control requests are never recorded: GET /record
// answers Record as JSON, GET /distinct answers Distinct as JSON, POST
// /reset calls Reset. Remote is its client.
func (s *Server) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+controlRecord, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, s.Record())
	})
	mux.HandleFunc("GET "+controlDistinct, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, s.Distinct())
	})
	mux.HandleFunc("POST "+controlReset, func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Remote is a Server running in another process (a benchmark keeps the
// site out of the crawler's process, as a real site is, so that the two do
// not share one Go scheduler), reached through its ControlHandler.
type Remote struct {
	site, control string
	client        *http.Client
}

// NewRemote returns a client for the server whose site is at siteURL and
// whose ControlHandler is at controlURL (both "http://host:port/").
func NewRemote(siteURL, controlURL string) *Remote {
	return &Remote{
		site:    siteURL,
		control: strings.TrimSuffix(controlURL, "/"),
		client:  &http.Client{Timeout: 30 * time.Second},
	}
}

// URL returns the site's root URL.
func (r *Remote) URL() string { return r.site }

// ControlURL returns the URL of the server's ControlHandler.
func (r *Remote) ControlURL() string { return r.control + "/" }

// Reset makes the server forget every request answered so far.
func (r *Remote) Reset() error {
	resp, err := r.client.Post(r.control+controlReset, "", nil)
	if err != nil {
		return fmt.Errorf("benchsite remote reset: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("benchsite remote reset: %s", resp.Status)
	}
	return nil
}

// Distinct returns the server's Distinct.
func (r *Remote) Distinct() (int, error) {
	var n int
	if err := r.get(controlDistinct, &n); err != nil {
		return 0, fmt.Errorf("benchsite remote distinct: %w", err)
	}
	return n, nil
}

// Record returns the server's Record.
func (r *Remote) Record() (Record, error) {
	var rec Record
	if err := r.get(controlRecord, &rec); err != nil {
		return Record{}, fmt.Errorf("benchsite remote record: %w", err)
	}
	return rec, nil
}

func (r *Remote) get(path string, v any) error {
	resp, err := r.client.Get(r.control + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v)
}
