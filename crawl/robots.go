package crawl

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/temoto/robotstxt"
)

// RobotsRecord is a host's robots.txt as fetched: the unit the ring shares,
// so that one node fetches it and every node parses the same bytes.
type RobotsRecord struct {
	// Status is the HTTP status of the final answer, 0 when the host could
	// not be reached or redirected too often.
	Status int `json:"status"`
	// Body holds at most RobotsMaxBytes bytes of the file.
	Body []byte `json:"body,omitempty"`
	// Fetched is when the file was fetched; a cache trusts it for RobotsTTL.
	Fetched time.Time `json:"fetched"`
}

// Robots is the parsed robots.txt policy of one origin for one product
// token. The zero value allows everything. It is immutable and safe for
// concurrent use.
type Robots struct {
	disallowAll bool
	group       *robotstxt.Group // nil: no rules apply
}

// ParseRobots returns the policy of rec for the crawler whose product
// token is agent (as in "herod"), following RFC 9309: a 2xx body is
// parsed leniently (lines that cannot be understood are skipped, as the
// RFC asks); 4xx means the file is unavailable and everything is allowed,
// except 429, which is treated as a server error; 5xx, status 0
// (unreachable) and anything else mean everything is disallowed. Only the
// first RobotsMaxBytes bytes are parsed.
func ParseRobots(rec RobotsRecord, agent string) *Robots {
	switch s := rec.Status; {
	case s >= 200 && s < 300:
	case s == 429:
		return &Robots{disallowAll: true}
	case s >= 400 && s < 500:
		return &Robots{}
	default:
		return &Robots{disallowAll: true}
	}
	data, err := robotstxt.FromBytes(sanitizeRobots(rec.Body))
	if err != nil {
		// sanitizeRobots only emits lines the parser accepts; should the
		// parser refuse them anyway, err on the side of the site.
		return &Robots{disallowAll: true}
	}
	g := data.FindGroup(strings.ToLower(agent))
	return &Robots{group: g}
}

// Allowed reports whether a URL path (escaped, with its query when it has
// one) may be fetched.
func (r *Robots) Allowed(pathQuery string) bool {
	if r == nil {
		return true
	}
	if r.disallowAll {
		return false
	}
	if r.group == nil || pathQuery == "/robots.txt" {
		return true
	}
	return r.group.Test(pathQuery)
}

// CrawlDelay returns the Crawl-delay of the group that applies, clamped to
// [0, 24h]; 0 when none is given.
func (r *Robots) CrawlDelay() time.Duration {
	if r == nil || r.group == nil {
		return 0
	}
	return min(max(r.group.CrawlDelay, 0), 24*time.Hour)
}

// neverPath is a rule path no request path can start with ('%' must be
// followed by two hex digits in a URL). It stands in for an empty
// Allow/Disallow value, which matches nothing but still ends a group of
// User-agent lines.
const neverPath = "/%%herod-empty"

// sanitizeRobots rewrites a robots.txt body into lines the robotstxt
// parser always accepts: at most RobotsMaxBytes bytes (a line cut by the
// limit is dropped), a leading BOM removed, comments removed, one
// "field: value" per line with the value's first word only, unknown
// fields, rules before the first User-agent and malformed Crawl-delays
// dropped.
func sanitizeRobots(body []byte) []byte {
	if len(body) > RobotsMaxBytes {
		body = body[:RobotsMaxBytes]
		if i := bytes.LastIndexAny(body, "\r\n"); i >= 0 {
			body = body[:i]
		} else {
			body = nil
		}
	}
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	var out bytes.Buffer
	agentSeen := false
	for len(body) > 0 {
		var line []byte
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			line, body = body, nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		field, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		name := strings.ToLower(strings.TrimSpace(string(field)))
		if strings.ContainsAny(name, " \t\v") {
			continue
		}
		var v string
		if f := strings.Fields(string(value)); len(f) > 0 {
			v = f[0]
		}
		switch name {
		case "user-agent", "useragent":
			if v == "" {
				continue
			}
			agentSeen = true
			out.WriteString("user-agent: " + strings.ToLower(v) + "\n")
		case "allow", "disallow":
			if !agentSeen {
				continue
			}
			switch {
			case v == "":
				v = neverPath
			case strings.Trim(v, "*") == "":
				v = "/" // "*" matches every path
			}
			out.WriteString(name + ": " + v + "\n")
		case "crawl-delay", "crawldelay":
			d, err := strconv.ParseFloat(v, 64)
			if !agentSeen || err != nil || d < 0 || math.IsInf(d, 0) || math.IsNaN(d) {
				continue
			}
			out.WriteString("crawl-delay: " + strconv.FormatFloat(min(d, 86400), 'f', -1, 64) + "\n")
		}
	}
	return out.Bytes()
}

// robotstxtFromBytes is the parser entry point, named for tests.
var robotstxtFromBytes = robotstxt.FromBytes

// SameRobots reports whether two records of one robots.txt mean the same
// policy for every crawler: the same outcome class (a 2xx file, a 4xx but
// 429 that allows everything, or anything else that disallows
// everything) and, for a file, the same rules once sanitized (comments,
// unknown lines and spacing aside). Two holders of a record that agree
// confirm each other (see package node/politeness).
func SameRobots(a, b RobotsRecord) bool {
	ca, cb := robotsClass(a.Status), robotsClass(b.Status)
	if ca != cb {
		return false
	}
	return ca != robotsFile || bytes.Equal(sanitizeRobots(a.Body), sanitizeRobots(b.Body))
}

// Outcome classes of a robots.txt record (ParseRobots).
const (
	robotsFile        = iota // 2xx: the rules of the body
	robotsAllowAll           // 4xx but 429: unavailable, everything allowed
	robotsDisallowAll        // 429, 5xx, unreachable: everything disallowed
)

func robotsClass(status int) int {
	switch {
	case status >= 200 && status < 300:
		return robotsFile
	case status == 429:
		return robotsDisallowAll
	case status >= 400 && status < 500:
		return robotsAllowAll
	}
	return robotsDisallowAll
}
