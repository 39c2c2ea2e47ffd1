package gateway

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/search"
)

// SearchIndex is the full-text index the gateway's /search asks: each
// term's postings from its holders and the collection statistics
// (node/search.Service on a ring member).
type SearchIndex interface {
	search.Source
	search.Stats
}

// searchPath is the UI origin's full-text search.
const searchPath = "/search"

// searchData is the search page's view.
type searchData struct {
	Q, At, Site string
	Searched    bool
	Error       string
	Results     []searchResult
	Page        int
	Start       int // rank of the page's first result
	// PrevURL and NextURL are the neighbouring pages of results (the
	// same query, time, site and page size); AllSites is the query
	// without its site parameter. Empty when there is none.
	PrevURL, NextURL, AllSites string
	Next                       string
	Matches                    int
}

type searchResult struct {
	search.Result
	TS      string        // the capture's timestamp, for its link
	Date    string        // the capture's date, for readers
	Snippet template.HTML // escaped by search.Snippet, terms in <mark>
}

// searchJSON is /search?output=json's answer.
type searchJSON struct {
	Query   string             `json:"query"`
	At      string             `json:"at"` // timestamp of the time searched
	Results []searchJSONResult `json:"results"`
	// Next is the resume cursor: ask again with &cursor=Next for the
	// following page; absent after the last.
	Next    string   `json:"next,omitempty"`
	Matches int      `json:"matches"`
	Terms   []string `json:"terms"`
}

type searchJSONResult struct {
	search.Result
	Timestamp string `json:"timestamp"`
	Replay    string `json:"replay"` // path of the capture in the archive
}

// serveSearch answers GET /search?q=…[&at=TS][&site=HOST][&page=N]
// [&cursor=C][&output=json]: the captures live at the time (now by
// default) whose verified text holds every word, best first; every
// result's title and snippet come from its capture, fetched through the
// gateway's archive (verified, access rules applied), so a capture
// readers may not see is never a result.
func (s *Server) serveSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := searchData{Q: strings.TrimSpace(q.Get("q")), At: strings.TrimSpace(q.Get("at")), Site: strings.TrimSpace(q.Get("site")), Page: 1}
	asJSON := q.Get("output") == "json"
	fail := func(status int, msg string) {
		s.countStatus(status)
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":` + strconv.Quote(msg) + "}\n"))
			return
		}
		d.Error = msg
		s.render(w, r, status, "search", d)
	}
	if s.cfg.Search == nil {
		fail(http.StatusNotImplemented, "This gateway keeps no full-text index.")
		return
	}
	if d.Q == "" {
		if asJSON {
			fail(http.StatusBadRequest, "q is required")
			return
		}
		s.render(w, r, http.StatusOK, "search", d)
		return
	}
	req := search.Request{Query: d.Q, Site: d.Site, Cursor: q.Get("cursor")}
	if d.At != "" {
		ts, err := parseFormDate(d.At)
		if err == nil && ts != "" {
			req.At, err = ParseTimestamp(ts)
		}
		if err != nil || ts == "" {
			fail(http.StatusBadRequest, "at: not a date or timestamp: "+d.At)
			return
		}
	}
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 1000 {
			fail(http.StatusBadRequest, "page: not a number from 1 to 1000: "+p)
			return
		}
		d.Page, req.Page = n, n
	}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		req.Limit = min(n, 100)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	eng := &search.Engine{Source: s.cfg.Search, Stats: s.cfg.Search, Texts: search.ArchiveTexts{Archive: s.cfg.Archive}, Now: s.cfg.Now}
	res, err := eng.Search(ctx, req)
	d.Searched = true
	switch {
	case errors.Is(err, search.ErrEmptyQuery):
		fail(http.StatusBadRequest, "Nothing to search: the query has only very common words.")
		return
	case errors.Is(err, search.ErrBadQuery):
		fail(http.StatusBadRequest, err.Error())
		return
	case err != nil:
		s.log.Warn("gateway: search", "q", d.Q, "err", err)
		fail(http.StatusServiceUnavailable, "The index could not be searched now: "+err.Error())
		return
	}
	at := req.At
	if at.IsZero() {
		at = s.now()
	}
	if asJSON {
		out := searchJSON{Query: d.Q, At: FormatTimestamp(at), Next: res.Next, Matches: res.Matches, Terms: res.Terms, Results: []searchJSONResult{}}
		for _, x := range res.Results {
			ts := FormatTimestamp(x.Time)
			out.Results = append(out.Results, searchJSONResult{Result: x, Timestamp: ts, Replay: webPath(ts, "", x.URL)})
		}
		writeJSON(w, s.log, out)
		return
	}
	d.Matches, d.Next = res.Matches, res.Next
	limit := req.Limit
	if limit == 0 {
		limit = 10
	}
	d.Start = 1 + (d.Page-1)*limit
	// The next page resumes from this one's cursor (exact, where page
	// numbers count candidates and repeat one after a dropped result);
	// its number is for its numbering.
	if res.Next != "" {
		d.NextURL = searchURL(d.Q, d.At, d.Site, req.Limit, d.Page+1) + "&cursor=" + url.QueryEscape(res.Next)
	}
	if d.Page > 1 {
		d.PrevURL = searchURL(d.Q, d.At, d.Site, req.Limit, d.Page-1)
	}
	if d.Site != "" {
		d.AllSites = searchURL(d.Q, d.At, "", req.Limit, 0)
	}
	for _, x := range res.Results {
		d.Results = append(d.Results, searchResult{Result: x, TS: FormatTimestamp(x.Time),
			Date: x.Time.UTC().Format("2 Jan 2006 15:04"), Snippet: template.HTML(x.Snippet)})
	}
	s.render(w, r, http.StatusOK, "search", d)
}

// searchURL returns the search page of q as of at on site, limit results
// a page (0: the default), page page (0 or 1: the first); empty
// parameters are left out.
func searchURL(q, at, site string, limit, page int) string {
	v := url.Values{"q": {q}}
	if at != "" {
		v.Set("at", at)
	}
	if site != "" {
		v.Set("site", site)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	return searchPath + "?" + v.Encode()
}

// searchBox returns the home page's search box, or nil without an index.
func (s *Server) searchBox() *searchData {
	if s.cfg.Search == nil {
		return nil
	}
	return &searchData{}
}

// now is the gateway's clock.
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}
