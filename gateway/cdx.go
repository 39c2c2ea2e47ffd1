package gateway

import (
	"bytes"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/internal/canon"
)

// The CDX API is the subset of pywb's CDX server API that researchers'
// tools use:
//
//	/cdx?url=<url>[&matchType=exact|prefix|host][&from=<ts>][&to=<ts>]
//	     [&output=json|text][&limit=<n>][&filter=[!][=|~]<field>:<expr>]…
//
// url ending in "*" means matchType=prefix. from pads down and to pads up
// ("from=2014&to=2014" is the whole year). output=text (the default) writes
// CDXJ lines, "<urlkey> <timestamp> <json>"; output=json writes one JSON
// object per line. Exact matches work on any Archive; prefix and host
// matches need a Lister (501 without one). Each filter (they combine with
// AND) tests the field url, mime or status: by default expr is a regular
// expression that must match the whole value, "=" asks for equality, "~"
// for a substring, and a leading "!" negates.

// MaxCDXLimit bounds the lines one CDX request returns.
const MaxCDXLimit = 100000

// ErrQuery reports a malformed CDX or export query.
var ErrQuery = errors.New("gateway: malformed query")

// ParseQuery reads a Query from CDX API parameters (url, matchType, from,
// to, limit). It returns ErrQuery (wrapped) for bad input.
func ParseQuery(p url.Values) (Query, error) {
	var q Query
	raw := strings.TrimSpace(p.Get("url"))
	if raw == "" {
		return q, fmt.Errorf("%w: url is required", ErrQuery)
	}
	mt := p.Get("matchType")
	if strings.HasSuffix(raw, "*") && mt == "" {
		mt = "prefix"
		raw = strings.TrimSuffix(raw, "*")
	}
	switch mt {
	case "", "exact":
		q.Match = MatchExact
	case "prefix":
		q.Match = MatchPrefix
	case "host":
		q.Match = MatchHost
	default:
		return q, fmt.Errorf("%w: matchType %.20q (use exact, prefix or host)", ErrQuery, mt)
	}
	u, err := ArchivedURL(raw)
	if err != nil {
		return q, fmt.Errorf("%w: %v", ErrQuery, err)
	}
	q.URL = u
	if q.Match == MatchHost {
		q.URL = hostOf(u)
	}
	if f := p.Get("from"); f != "" {
		if q.From, err = ParseTimestampFrom(f); err != nil {
			return q, fmt.Errorf("%w: from: %v", ErrQuery, err)
		}
	}
	if t := p.Get("to"); t != "" {
		if q.To, err = ParseTimestamp(t); err != nil {
			return q, fmt.Errorf("%w: to: %v", ErrQuery, err)
		}
	}
	if l := p.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return q, fmt.Errorf("%w: limit %.20q", ErrQuery, l)
		}
		q.Limit = n
	}
	if q.Limit == 0 || q.Limit > MaxCDXLimit {
		q.Limit = MaxCDXLimit
	}
	return q, nil
}

// hostOf returns the host (with port) of a canonical URL, "" if none.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// serveCDX answers /cdx.
func (s *Server) serveCDX(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query()
	q, err := ParseQuery(p)
	if err != nil {
		s.badRequest(w, err.Error())
		return
	}
	filters, err := parseFilters(p["filter"])
	if err != nil {
		s.badRequest(w, err.Error())
		return
	}
	out := p.Get("output")
	if out != "" && out != "json" && out != "text" {
		s.badRequest(w, "gateway: output must be json or text")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	var vs []archive.Version
	switch {
	case q.Match == MatchExact:
		vs, err = s.cfg.Archive.Versions(ctx, q.URL)
	case s.list != nil:
		lq := q
		if len(filters) > 0 {
			lq.Limit = MaxCDXLimit // filters apply after listing
		}
		vs, err = s.list.List(ctx, lq)
	default:
		http.Error(w, "gateway: this node cannot answer "+q.Match.String()+
			" queries (its archive does not list URLs); use matchType=exact", http.StatusNotImplemented)
		return
	}
	if err != nil {
		s.stats.archiveErrors.Add(1)
		s.log.Warn("gateway: cdx", "url", q.URL, "err", err)
		http.Error(w, "gateway: cdx: "+err.Error(), http.StatusBadGateway)
		return
	}
	var b bytes.Buffer
	n := 0
	for _, v := range vs {
		if !q.Contains(v) || !filters.match(v) {
			continue
		}
		if n++; n > q.Limit {
			break
		}
		if out == "json" {
			writeCDXJSON(&b, v)
		} else {
			writeCDXJ(&b, v)
		}
	}
	if out == "json" {
		w.Header().Set("Content-Type", "text/x-ndjson")
	} else {
		w.Header().Set("Content-Type", "text/x-cdxj")
	}
	writeBody(w, r, http.StatusOK, b.Bytes())
}

// badRequest answers an API request with 400 and a plain-text reason.
func (s *Server) badRequest(w http.ResponseWriter, msg string) {
	s.countStatus(http.StatusBadRequest)
	http.Error(w, msg, http.StatusBadRequest)
}

// cdxFilter is one filter= parameter.
type cdxFilter struct {
	field  string // url, mime or status
	not    bool
	mode   byte // 0 regexp, '=' equal, '~' contains
	value  string
	regexp *regexp.Regexp
}

type cdxFilters []cdxFilter

// maxFilters bounds the filter parameters of one request.
const maxFilters = 16

// parseFilters reads pywb filter parameters.
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
		switch field {
		case "url", "original", "mime", "mimetype", "status", "statuscode":
		default:
			ok = false
		}
		if !ok {
			return nil, fmt.Errorf("%w: filter %.40q (use [!][=|~]url|mime|status:<value>)", ErrQuery, f)
		}
		c.field, c.value = field, value
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

// match reports whether v passes every filter.
func (fs cdxFilters) match(v archive.Version) bool {
	for _, f := range fs {
		var got string
		switch f.field {
		case "url", "original":
			got = v.URL
		case "mime", "mimetype":
			got = mediaType(v.ContentType)
		default:
			got = strconv.Itoa(v.Status)
		}
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

// cdxFields are the JSON fields of a CDX line, named as pywb names them.
type cdxFields struct {
	URLKey    string `json:"urlkey,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
	URL       string `json:"url"`
	Mime      string `json:"mime,omitempty"`
	Status    string `json:"status"`
	Digest    string `json:"digest"`
	Length    string `json:"length"`
	Offset    string `json:"offset"`
	Filename  string `json:"filename"`
}

func fields(v archive.Version) cdxFields {
	return cdxFields{
		URL:      v.URL,
		Mime:     mediaType(v.ContentType),
		Status:   strconv.Itoa(v.Status),
		Digest:   "sha1:" + base32.StdEncoding.EncodeToString(v.Digest[:]),
		Length:   strconv.FormatInt(v.Size, 10),   // the record's bytes in Filename
		Offset:   strconv.FormatInt(v.Offset, 10), // where it starts in its segment
		Filename: v.File,
	}
}

// writeCDXJ writes v as one CDXJ line.
func writeCDXJ(b *bytes.Buffer, v archive.Version) {
	j, _ := json.Marshal(fields(v)) // plain strings: cannot fail
	fmt.Fprintf(b, "%s %s %s\n", SURT(v.URL), FormatTimestamp(v.Time), j)
}

// writeCDXJSON writes v as one JSON object line.
func writeCDXJSON(b *bytes.Buffer, v archive.Version) {
	f := fields(v)
	f.URLKey, f.Timestamp = SURT(v.URL), FormatTimestamp(v.Time)
	j, _ := json.Marshal(f)
	b.Write(j)
	b.WriteByte('\n')
}

// SURT returns the sort-friendly URL key CDX indexes use: the host's labels
// reversed and comma-joined (a leading "www." dropped), the port if any,
// ")" and the path and query: "http://www.example.com/a?b" becomes
// "com,example)/a?b". A URL that does not parse is returned as is.
func SURT(u string) string {
	p, err := canon.Parse(u)
	if err != nil {
		return u
	}
	host := strings.TrimPrefix(p.Hostname(), "www.")
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	key := strings.Join(labels, ",")
	if port := p.Port(); port != "" {
		key += ":" + port
	}
	return key + ")" + p.RequestURI()
}
