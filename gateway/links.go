package gateway

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
	"github.com/herod-archive/herod/internal/canon"
)

// The link index and PageRank on the UI origin: /links?url=X[&at=TS]
// [&offset=N][&output=json] lists the pages linking to X (as of TS, any
// time without it), linksPage at a time; /api/rank?url=X[&at=TS]
// answers X's PageRank from the newest run at or before TS; POST
// /api/rank[?day=TS] (admin token) runs PageRank ring-wide. The
// calendar of a URL shows a short list of the pages linking to it as of
// its newest capture (inlinksPanel).
//
// The link index's records come from other nodes, which can lie: every
// listed link is checked by reading its source capture through the
// archive readers are shown (linkSource), and one the capture does not
// carry is left out and counted (LinksAnswer.Dropped).

// Link is one link to a URL, as the link index keeps it: the source page
// carried it, with Anchor as its text, from its capture at From until its
// first capture without it (Until; zero while its newest carries it).
type Link struct {
	Source string    `json:"source"`
	Anchor string    `json:"anchor"`
	From   time.Time `json:"from"`
	Until  time.Time `json:"until,omitzero"`
}

// LinksAnswer answers "which pages linked to URL as of At", one page of
// them.
type LinksAnswer struct {
	URL   string `json:"url"`
	Links []Link `json:"links"`
	// More counts links not listed: after this page or over the
	// holders' per-target cap.
	More int `json:"more,omitempty"`
	// Next is the offset of the next page; zero when this is the last.
	Next int `json:"next,omitempty"`
	// Dropped counts this page's links left out because their source
	// capture, as readers are shown it, does not carry them (or not with
	// that text): claims of a lying node.
	Dropped int `json:"dropped,omitempty"`
	// Unchecked counts this page's links left out because their source
	// capture could not be read in time (absent, not shown, unreachable).
	Unchecked int `json:"unchecked,omitempty"`
}

// CaptureReader reads a capture as readers are shown it (Archive.Get).
type CaptureReader interface {
	Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error)
}

// RankAnswer is a URL's PageRank from one run.
type RankAnswer struct {
	URL  string    `json:"url"`
	Rank float64   `json:"rank"`
	Day  time.Time `json:"day"` // the start of the crawl day the run ranked
	Run  string    `json:"run"`
}

// LinkIndex is what the gateway asks of the ring's link index and
// PageRank (the node implements it).
type LinkIndex interface {
	// Links returns a page of the links to url live at at (any time if
	// zero): at most limit, after the first offset of the holders' list.
	// Each is listed only if its source capture, read through src,
	// carries it; the others are counted (Dropped, Unchecked).
	Links(ctx context.Context, url string, at time.Time, offset, limit int, src CaptureReader) (LinksAnswer, error)
	// Rank returns url's rank from the newest run not after at;
	// an error wrapping ErrNoRank when none ranked it.
	Rank(ctx context.Context, url string, at time.Time) (RankAnswer, error)
	// RunRank runs PageRank ring-wide for the crawl day of day and
	// returns its summary.
	RunRank(ctx context.Context, day time.Time) (any, error)
}

// ErrNoRank reports a URL no PageRank run ranked.
var ErrNoRank = errors.New("gateway: no rank for this URL")

const (
	linksPath = "/links"
	rankPath  = "/api/rank"
	// maxLinksListed bounds the links the /links pages list, all pages
	// together.
	maxLinksListed = 1000
	// linksPage is how many links one /links page lists (and checks).
	linksPage = 50
	// inlinksShown is how many links the calendar's panel lists.
	inlinksShown = 10
)

type linkRow struct {
	Link
	FromTS, FromLabel, UntilLabel string
}

type linksData struct {
	URL, TS, AtLabel   string
	At                 bool
	Links              []linkRow
	Offset             int
	More, Next         int
	Dropped, Unchecked int
	Rank               *rankRow
}

type rankRow struct {
	Rank     float64
	DayLabel string
}

func linkRows(ls []Link) []linkRow {
	out := make([]linkRow, len(ls))
	for i, l := range ls {
		out[i] = linkRow{Link: l, FromTS: FormatTimestamp(l.From), FromLabel: l.From.UTC().Format(time.DateTime)}
		if !l.Until.IsZero() {
			out[i].UntilLabel = l.Until.UTC().Format(time.DateTime)
		}
	}
	return out
}

// linksQuery reads url and at of a /links or /api/rank request.
func linksQuery(q url.Values) (u string, at time.Time, ts string, err error) {
	if u, err = canon.Canonical(q.Get("url")); err != nil {
		return "", time.Time{}, "", err
	}
	if ts = q.Get("at"); ts != "" {
		if at, err = ParseTimestamp(ts); err != nil {
			return "", time.Time{}, "", err
		}
	}
	return u, at, ts, nil
}

// serveLinks answers /links.
func (s *Server) serveLinks(w http.ResponseWriter, r *http.Request) {
	if s.cfg.LinkIndex == nil {
		s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
		return
	}
	u, at, ts, err := linksQuery(r.URL.Query())
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Links: "+err.Error()+". Use /links?url=<URL>&at=<YYYYMMDDhhmmss>.", "")
		return
	}
	offset := 0
	if o := r.URL.Query().Get("offset"); o != "" {
		if offset, err = strconv.Atoi(o); err != nil || offset < 0 || offset >= maxLinksListed {
			s.errorPage(w, r, http.StatusBadRequest, "Links: offset must be a number from 0 to "+strconv.Itoa(maxLinksListed-1)+".", "")
			return
		}
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	res, err := s.cfg.LinkIndex.Links(ctx, u, at, offset, min(linksPage, maxLinksListed-offset), linkSource{s})
	if err != nil {
		s.errorPage(w, r, http.StatusBadGateway, "The link index could not answer: "+err.Error(), "")
		return
	}
	if res.Next >= maxLinksListed {
		res.Next = 0 // the pages end at maxLinksListed
	}
	if r.URL.Query().Get("output") == "json" {
		writeJSON(w, s.log, res)
		return
	}
	d := linksData{URL: u, TS: ts, At: !at.IsZero(), Links: linkRows(res.Links), Offset: offset, More: res.More,
		Next: res.Next, Dropped: res.Dropped, Unchecked: res.Unchecked}
	if d.At {
		d.AtLabel = at.UTC().Format(time.DateTime)
	}
	if rk, err := s.cfg.LinkIndex.Rank(ctx, u, at); err == nil {
		d.Rank = &rankRow{Rank: rk.Rank, DayLabel: rk.Day.UTC().Format(time.DateOnly)}
	}
	s.render(w, r, http.StatusOK, "links", d)
}

// inlinksPanel is the calendar's short list of the pages linking to a
// URL as of its newest capture; nil without a link index or when it
// cannot answer (the calendar shows without it).
type inlinksPanel struct {
	URL, TS, AtLabel string
	Links            []linkRow
	More             int
	NotShown         int // dropped or unchecked
}

func (s *Server) inlinks(ctx context.Context, u string, at time.Time) *inlinksPanel {
	if s.cfg.LinkIndex == nil {
		return nil
	}
	res, err := s.cfg.LinkIndex.Links(ctx, u, at, 0, inlinksShown, linkSource{s})
	if err != nil {
		s.log.Debug("gateway: links", "url", u, "err", err)
		return nil
	}
	return &inlinksPanel{URL: u, TS: FormatTimestamp(at), AtLabel: at.UTC().Format(time.DateOnly),
		Links: linkRows(res.Links), More: res.More, NotShown: res.Dropped + res.Unchecked}
}

// linkSource is the CaptureReader the link index checks its records
// with: the gateway's archive, through which replay reads (verified from
// the holders, access rules and robots.txt applied: access.go), each
// read admitted as a replay's is (fetch slots and memory, Server.get).
type linkSource struct{ s *Server }

func (l linkSource) Get(ctx context.Context, u string, t time.Time) (archive.Version, *archive.Capture, error) {
	v, c, hold, err := l.s.get(ctx, u, t, 1)
	if hold != nil {
		hold.done()
	}
	if err == nil && c == nil {
		err = archive.ErrNotFound
	}
	return v, c, err
}

// serveRank answers GET /api/rank (anyone) and POST /api/rank (the
// admin token: a ring-wide run for the day of ?day=TS, today without).
func (s *Server) serveRank(w http.ResponseWriter, r *http.Request) {
	if s.cfg.LinkIndex == nil {
		s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
		return
	}
	if r.Method == http.MethodPost {
		if s.cfg.AdminToken == "" || !s.adminAllowed(w, r, "POST to run PageRank", "herod rank") {
			if s.cfg.AdminToken == "" {
				s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
			}
			return
		}
		day := s.cfg.Now()
		if ts := r.URL.Query().Get("day"); ts != "" {
			t, err := ParseTimestampFrom(ts)
			if err != nil {
				http.Error(w, "gateway: rank: day: "+err.Error(), http.StatusBadRequest)
				return
			}
			day = t
		}
		// A run reads every member's pages: bounded by the client only.
		sum, err := s.cfg.LinkIndex.RunRank(r.Context(), day)
		if err != nil {
			http.Error(w, "gateway: rank: "+err.Error(), http.StatusBadGateway)
			return
		}
		writeJSON(w, s.log, sum)
		return
	}
	u, at, _, err := linksQuery(r.URL.Query())
	if err != nil {
		http.Error(w, "gateway: rank: "+err.Error(), http.StatusBadRequest)
		return
	}
	if at.IsZero() {
		at = s.cfg.Now()
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	rk, err := s.cfg.LinkIndex.Rank(ctx, u, at)
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, ErrNoRank) {
			code = http.StatusNotFound
		}
		http.Error(w, "gateway: rank: "+err.Error(), code)
		return
	}
	writeJSON(w, s.log, rk)
}

// maxRankLookups bounds the URLs of one CDX request whose rank is
// looked up (each asks the URL's owner); rows past it show none.
const maxRankLookups = 256

// needsRank reports whether a CDX request shows, filters or collapses
// on the rank field.
func (r *cdxRequest) needsRank() bool {
	if slices.Contains(r.fl, "rank") || r.collapse == "rank" {
		return true
	}
	return slices.ContainsFunc(r.filters, func(f cdxFilter) bool { return f.field == "rank" })
}

// fillRanks sets the Rank of rows when the request asks for it: the
// URL's rank from the newest run at or before the capture's day, one
// lookup per URL and day.
func (s *Server) fillRanks(ctx context.Context, req *cdxRequest, rows []cdx.Row) {
	if s.cfg.LinkIndex == nil || !req.needsRank() {
		return
	}
	type key struct {
		url string
		day string
	}
	seen := map[key]float64{}
	for i := range rows {
		k := key{rows[i].URL, rows[i].Time.UTC().Format(time.DateOnly)}
		v, ok := seen[k]
		if !ok {
			if len(seen) >= maxRankLookups {
				continue
			}
			if rk, err := s.cfg.LinkIndex.Rank(ctx, rows[i].URL, rows[i].Time); err == nil {
				v = rk.Rank
			}
			seen[k] = v
		}
		rows[i].Rank = v
	}
}
