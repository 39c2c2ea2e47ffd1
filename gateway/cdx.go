package gateway

import (
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herod-archive/herod/archive/cdx"
)

// The CDX API answers the queries of the Wayback CDX server and pywb,
// ring-wide:
//
//	/cdx?url=<url>[&matchType=exact|prefix|host|domain][&from=<ts>][&to=<ts>]
//	     [&limit=<n>][&fl=<field>,…][&filter=[!][=|~]<field>:<expr>]…
//	     [&collapse=<field>[:<n>]][&sort=reverse|closest&closest=<ts>]
//	     [&output=cdxj|text|json|ndjson|link][&showResumeKey=true][&resumeKey=<key>]
//
//   - url "example.com/*" means matchType=prefix, "*.example.com" domain.
//   - from pads down and to pads up ("from=2014&to=2014" is the year).
//   - limit=N gives the first N rows, limit=-N the last N (in ascending
//     order).
//   - Fields (fl, filter, collapse): urlkey, timestamp, original (url),
//     mimetype (mime), statuscode (status), digest (base32 SHA-1 of the
//     payload), length (payload bytes), offset, filename (the version's
//     file), and herod's peer (the node that fetched and signed it) and
//     witnesses (the other holders that vouch for its date, and when
//     they first held it: "<peer>@<timestamp>" comma-separated in text
//     and json, an array of {"peer","seen"} objects in cdxj and ndjson,
//     earliest first), and imported (for a version imported from another
//     tool's file, not crawled: the file's "sha256:<hex>" in text and
//     json, {"from","record","at"} in cdxj and ndjson; empty or absent
//     for a crawl). cdxj and ndjson list them by default, and
//     browser ("1" for a capture made in a browser as it rendered a
//     page, empty otherwise; cdxj and ndjson leave it out then).
//   - filter: a regular expression that must match the whole value; "="
//     asks for equality, "~" for a substring, a leading "!" negates.
//     Filters combine with AND.
//   - collapse=field[:N] drops a row whose field (its first N characters)
//     equals that of the row before it: collapse=timestamp:8 keeps one
//     capture per day. With sort=reverse or limit<0 the latest of each
//     run is kept.
//   - sort=reverse lists in descending order; sort=closest&closest=<ts>
//     (exact matches only) by distance from that time.
//   - output: cdxj (the default, pywb's "<urlkey> <timestamp> <json>"),
//     text (the Wayback CDX server's space-separated fields, the default
//     when fl is given), json (the Wayback CDX server's array of arrays,
//     field names first), ndjson (pywb's JSON object per line), link
//     (application/link-format mementos, as Memento TimeMaps).
//   - showResumeKey=true ends a partial result with the key that resumes
//     it (text, cdxj, ndjson: an empty line then the key; json: [] then
//     [key]); resumeKey=<key> continues after it.
//
// One request examines at most MaxCDXLimit captures. A query that matches
// more, without showResumeKey, is refused with a message saying how to
// narrow or page it: the gateway never does unbounded work.

// MaxCDXLimit bounds the captures one CDX request examines.
const MaxCDXLimit = cdx.MaxLimit

// ErrQuery reports a malformed CDX or export query.
var ErrQuery = errors.New("gateway: malformed query")

// cdxPageSize is the page the CDX API asks its Pager for when it needs
// more rows than the limit (filters and collapse drop some).
const cdxPageSize = 1000

// cdxFieldNames are the canonical CDX field names, in Wayback order.
var cdxFieldNames = []string{"urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length", "offset", "filename", "peer", "witnesses", "browser", "rank", "imported"}

// cdxAliases maps pywb's field names to the canonical ones.
var cdxAliases = map[string]string{"url": "original", "mime": "mimetype", "status": "statuscode"}

// pywbNames are the JSON names of pywb's cdxj and ndjson output.
var pywbNames = map[string]string{"original": "url", "mimetype": "mime", "statuscode": "status"}

// waybackDefaultFields are the Wayback CDX server's default fields.
var waybackDefaultFields = []string{"urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"}

// cdxjDefaultFields are the JSON fields of pywb's cdxj output, then
// herod's provenance.
var cdxjDefaultFields = []string{"original", "mimetype", "statuscode", "digest", "length", "offset", "filename", "peer", "witnesses", "browser", "imported"}

// cdxField returns the canonical name of a field, or "" if unknown.
func cdxField(name string) string {
	if a, ok := cdxAliases[name]; ok {
		return a
	}
	if slices.Contains(cdxFieldNames, name) {
		return name
	}
	return ""
}

// cdxRequest is a parsed CDX API request.
type cdxRequest struct {
	q             cdx.Query
	limit         int // 0: none; < 0: the last -limit rows
	fl            []string
	flSet         bool
	filters       cdxFilters
	collapse      string
	collapseN     int // 0: whole value
	reverse       bool
	closest       time.Time
	hasClosest    bool
	output        string
	showResumeKey bool
	after         *cdx.Key
}

// parseCDX reads a CDX API request. Errors wrap ErrQuery.
func parseCDX(p url.Values) (*cdxRequest, error) {
	r := &cdxRequest{}
	raw := strings.TrimSpace(p.Get("url"))
	if raw == "" {
		return nil, fmt.Errorf("%w: url is required", ErrQuery)
	}
	mt := p.Get("matchType")
	switch {
	case mt == "" && strings.HasPrefix(raw, "*."):
		mt, raw = "domain", strings.TrimPrefix(raw, "*.")
	case mt == "" && strings.HasSuffix(raw, "*"):
		mt, raw = "prefix", strings.TrimSuffix(raw, "*")
	}
	switch mt {
	case "", "exact":
		r.q.Match = cdx.MatchExact
	case "prefix":
		r.q.Match = cdx.MatchPrefix
	case "host":
		r.q.Match = cdx.MatchHost
	case "domain":
		r.q.Match = cdx.MatchDomain
	default:
		return nil, fmt.Errorf("%w: matchType %.20q (use exact, prefix, host or domain)", ErrQuery, mt)
	}
	u, err := ArchivedURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	r.q.URL = u
	if r.q.Match == cdx.MatchHost || r.q.Match == cdx.MatchDomain {
		r.q.URL = strings.ToLower(hostOf(u))
	}
	if f := p.Get("from"); f != "" {
		if r.q.From, err = ParseTimestampFrom(f); err != nil {
			return nil, fmt.Errorf("%w: from: %v", ErrQuery, err)
		}
	}
	if t := p.Get("to"); t != "" {
		if r.q.To, err = ParseTimestamp(t); err != nil {
			return nil, fmt.Errorf("%w: to: %v", ErrQuery, err)
		}
	}
	if l := p.Get("limit"); l != "" {
		if r.limit, err = strconv.Atoi(l); err != nil || r.limit > MaxCDXLimit || r.limit < -MaxCDXLimit {
			return nil, fmt.Errorf("%w: limit %.20q (an integer from -%d to %d)", ErrQuery, l, MaxCDXLimit, MaxCDXLimit)
		}
	}
	if err := r.parseFields(p); err != nil {
		return nil, err
	}
	if err := r.parseOrder(p); err != nil {
		return nil, err
	}
	return r, nil
}

// parseFields reads fl, filter, collapse and output.
func (r *cdxRequest) parseFields(p url.Values) error {
	if fl := p.Get("fl"); fl != "" {
		r.flSet = true
		for _, f := range strings.Split(fl, ",") {
			c := cdxField(strings.TrimSpace(f))
			if c == "" {
				return fmt.Errorf("%w: fl field %.30q (use %s)", ErrQuery, f, strings.Join(cdxFieldNames, ", "))
			}
			r.fl = append(r.fl, c)
		}
	}
	var err error
	if r.filters, err = parseFilters(p["filter"]); err != nil {
		return err
	}
	if c := p.Get("collapse"); c != "" {
		name, n, hasN := strings.Cut(c, ":")
		if r.collapse = cdxField(name); r.collapse == "" {
			return fmt.Errorf("%w: collapse field %.30q", ErrQuery, name)
		}
		if hasN {
			if r.collapseN, err = strconv.Atoi(n); err != nil || r.collapseN <= 0 {
				return fmt.Errorf("%w: collapse length %.20q", ErrQuery, n)
			}
		}
	}
	r.output = p.Get("output")
	switch r.output {
	case "":
		r.output = "cdxj"
		if r.flSet {
			r.output = "text"
		}
	case "cdxj", "text", "json", "ndjson", "link":
	default:
		return fmt.Errorf("%w: output %.20q (use cdxj, text, json, ndjson or link)", ErrQuery, r.output)
	}
	if !r.flSet {
		r.fl = waybackDefaultFields
		if r.output == "cdxj" || r.output == "ndjson" {
			r.fl = append([]string{"urlkey", "timestamp"}, cdxjDefaultFields...)
		}
	}
	return nil
}

// parseOrder reads sort, closest, showResumeKey and resumeKey.
func (r *cdxRequest) parseOrder(p url.Values) error {
	switch p.Get("showResumeKey") {
	case "", "false", "0":
	case "true", "1":
		r.showResumeKey = true
	default:
		return fmt.Errorf("%w: showResumeKey=%.20q (true or false)", ErrQuery, p.Get("showResumeKey"))
	}
	if k := p.Get("resumeKey"); k != "" {
		key, err := cdx.ParseKey(k)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrQuery, err)
		}
		r.after = &key
	}
	if c := p.Get("closest"); c != "" {
		t, err := ParseTimestampFrom(c)
		if err != nil {
			return fmt.Errorf("%w: closest: %v", ErrQuery, err)
		}
		r.closest, r.hasClosest = t, true
	}
	switch s := p.Get("sort"); s {
	case "", "default":
		if r.hasClosest {
			return fmt.Errorf("%w: closest= needs sort=closest", ErrQuery)
		}
	case "reverse":
		if r.limit < 0 {
			return fmt.Errorf("%w: sort=reverse with a negative limit: use sort=reverse&limit=%d for the last rows, newest first", ErrQuery, -r.limit)
		}
		r.reverse = true
	case "closest":
		switch {
		case !r.hasClosest:
			return fmt.Errorf("%w: sort=closest needs closest=<timestamp>", ErrQuery)
		case r.q.Match != cdx.MatchExact:
			return fmt.Errorf("%w: sort=closest needs matchType=exact", ErrQuery)
		case r.after != nil || r.showResumeKey || r.limit < 0:
			return fmt.Errorf("%w: sort=closest cannot page or take the last rows", ErrQuery)
		}
	default:
		return fmt.Errorf("%w: sort %.20q (use reverse or closest)", ErrQuery, s)
	}
	if r.showResumeKey && r.output == "link" {
		return fmt.Errorf("%w: output=link cannot show a resume key", ErrQuery)
	}
	if r.limit < 0 {
		r.reverse = true
	}
	return nil
}

// needsPeers reports whether the request shows or filters on the peer
// or the witnesses.
func (r *cdxRequest) needsPeers() bool {
	prov := func(f string) bool { return f == "peer" || f == "witnesses" }
	if slices.ContainsFunc(r.fl, prov) || prov(r.collapse) {
		return true
	}
	return slices.ContainsFunc(r.filters, func(f cdxFilter) bool { return prov(f.field) })
}

// cdxFilter is one filter= parameter.
type cdxFilter struct {
	field  string // canonical name
	not    bool
	mode   byte // 0 regexp, '=' equal, '~' contains
	value  string
	regexp *regexp.Regexp
}

type cdxFilters []cdxFilter

// maxFilters bounds the filter parameters of one request.
const maxFilters = 16

// parseFilters reads filter parameters: [!][=|~]field:value.
func parseFilters(fs []string) (cdxFilters, error) {
	if len(fs) > maxFilters {
		return nil, fmt.Errorf("%w: more than %d filters", ErrQuery, maxFilters)
	}
	var out cdxFilters
	for _, f := range fs {
		var c cdxFilter
		if strings.HasPrefix(f, "!") {
			c.not, f = true, f[1:]
		}
		if strings.HasPrefix(f, "=") || strings.HasPrefix(f, "~") {
			c.mode, f = f[0], f[1:]
		}
		field, value, ok := strings.Cut(f, ":")
		if c.field = cdxField(field); c.field == "" || !ok {
			return nil, fmt.Errorf("%w: filter %.40q (use [!][=|~]<field>:<value>, field one of %s)", ErrQuery, f, strings.Join(cdxFieldNames, ", "))
		}
		c.value = value
		if c.mode == 0 {
			re, err := regexp.Compile("^(?:" + value + ")$")
			if err != nil {
				return nil, fmt.Errorf("%w: filter regexp: %v", ErrQuery, err)
			}
			c.regexp = re
		}
		out = append(out, c)
	}
	return out, nil
}

// match reports whether row passes every filter.
func (fs cdxFilters) match(row *cdxValues) bool {
	for _, f := range fs {
		got := row.get(f.field)
		var ok bool
		switch f.mode {
		case '=':
			ok = got == f.value
		case '~':
			ok = strings.Contains(got, f.value)
		default:
			ok = f.regexp.MatchString(got)
		}
		if ok == f.not {
			return false
		}
	}
	return true
}

// cdxValues are a row's field values, computed on first use.
type cdxValues struct {
	row  cdx.Row
	surt string
}

func (c *cdxValues) get(field string) string {
	v := c.row.Version
	switch field {
	case "urlkey":
		return c.surt
	case "timestamp":
		return FormatTimestamp(v.Time)
	case "original":
		return v.URL
	case "mimetype":
		return mediaType(v.ContentType)
	case "statuscode":
		return strconv.Itoa(v.Status)
	case "digest":
		return base32.StdEncoding.EncodeToString(v.Digest[:])
	case "length":
		return strconv.FormatInt(v.Size, 10) // the record's bytes in filename
	case "offset":
		return strconv.FormatInt(v.Offset, 10) // where it starts in its segment
	case "filename":
		return v.File
	case "peer":
		return c.row.Peer
	case "witnesses":
		ws := make([]string, len(c.row.Witnesses))
		for i, w := range c.row.Witnesses {
			ws[i] = w.Peer + "@" + FormatTimestamp(w.Seen)
		}
		return strings.Join(ws, ",")
	case "browser":
		if v.Browser {
			return "1"
		}
	case "rank": // links.go
		if c.row.Rank == 0 {
			return ""
		}
		return strconv.FormatFloat(c.row.Rank, 'g', 6, 64)
	case "imported":
		if v.Imported != nil {
			return v.Imported.From
		}
	}
	return ""
}

// collapseKey is the value collapse compares.
func (r *cdxRequest) collapseKey(c *cdxValues) string {
	v := c.get(r.collapse)
	if r.collapseN > 0 && len(v) > r.collapseN {
		v = v[:r.collapseN]
	}
	return v
}

// serveCDX answers /cdx.
func (s *Server) serveCDX(w http.ResponseWriter, r *http.Request) {
	req, err := parseCDX(r.URL.Query())
	if err != nil {
		s.badRequest(w, err.Error())
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	res, err := s.runCDX(ctx, req)
	switch {
	case errors.Is(err, errCDXCap):
		s.badRequest(w, err.Error())
		return
	case errors.Is(err, ErrNoListing):
		http.Error(w, err.Error(), http.StatusNotImplemented)
		return
	case err != nil:
		s.stats.archiveErrors.Add(1)
		s.log.Warn("gateway: cdx", "url", req.q.URL, "err", err)
		http.Error(w, "gateway: cdx: "+err.Error(), http.StatusBadGateway)
		return
	}
	body, ctype := req.render(res, s.uiOrigin(r))
	w.Header().Set("Content-Type", ctype)
	writeBody(w, r, http.StatusOK, body)
}
