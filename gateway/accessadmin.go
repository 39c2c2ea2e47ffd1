package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/access"
	"github.com/herod-archive/herod/internal/canon"
)

// accessPath is the admin endpoint of the access rules (herod access).
const accessPath = "/api/access"

// maxAccessBody bounds an access request's body.
const maxAccessBody = 64 << 10

// maxCheckVersions bounds the versions a check reports.
const maxCheckVersions = 1000

// AccessRequest is the body of POST /api/access.
type AccessRequest struct {
	// Op is "add", "remove", "list" or "check".
	Op string `json:"op"`
	// Rule is the rule to add.
	Rule *access.Rule `json:"rule,omitempty"`
	// ID is what to remove: a rule ID, a URL or a SURT prefix.
	ID string `json:"id,omitempty"`
	// URL is what to check; Time the capture time to check it at (zero:
	// now), besides every version the archive holds.
	URL  string    `json:"url,omitempty"`
	Time time.Time `json:"time,omitzero"`
	// Ring adds or removes the rule ring-wide (an order signed by this
	// node) instead of in this node's rules file.
	Ring bool `json:"ring,omitempty"`
}

// AccessReply answers an AccessRequest.
type AccessReply struct {
	ID       string          `json:"id,omitempty"`      // add: the rule's ID
	Removed  int             `json:"removed,omitempty"` // remove
	Rules    []access.Listed `json:"rules,omitempty"`   // list
	SURT     string          `json:"surt,omitempty"`    // check: the URL's key
	Decision *AccessCheck    `json:"decision,omitempty"`
	Versions []AccessCheck   `json:"versions,omitempty"` // check: each version's
}

// AccessCheck is the decision for one capture time.
type AccessCheck struct {
	Time   time.Time     `json:"time"`
	Action access.Action `json:"action"`
	Status int           `json:"status"`
	Rule   *access.Rule  `json:"rule,omitempty"`
}

func checkOf(d access.Decision, t time.Time) AccessCheck {
	return AccessCheck{Time: t, Action: d.Action, Status: d.Status(), Rule: d.Rule}
}

// serveAccess answers POST /api/access (AccessRequest, admin token).
func (s *Server) serveAccess(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Access == nil || s.cfg.AdminToken == "" {
		s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
		return
	}
	if !s.adminAllowed(w, r, "POST an access request (JSON)", "herod access") {
		return
	}
	var req AccessRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAccessBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "gateway: access: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	var rep AccessReply
	switch req.Op {
	case "add":
		if req.Rule == nil {
			http.Error(w, "gateway: access: add needs a rule", http.StatusBadRequest)
			return
		}
		if req.Rule.Date.IsZero() {
			req.Rule.Date = s.cfg.Now().UTC()
		}
		if err := s.cfg.Access.Add(ctx, *req.Rule, req.Ring); err != nil {
			status := http.StatusBadGateway
			if errors.Is(err, access.ErrInvalid) {
				status = http.StatusBadRequest
			}
			http.Error(w, "gateway: access: "+err.Error(), status)
			return
		}
		rep.ID = req.Rule.ID()
	case "remove":
		if req.ID == "" {
			http.Error(w, "gateway: access: remove needs an id, URL or SURT prefix", http.StatusBadRequest)
			return
		}
		n, err := s.cfg.Access.Remove(ctx, req.ID, req.Ring)
		if err != nil {
			http.Error(w, "gateway: access: "+err.Error(), http.StatusBadGateway)
			return
		}
		rep.Removed = n
	case "list":
		rep.Rules = s.cfg.Access.List()
	case "check":
		u, err := canon.Canonical(req.URL)
		if err != nil {
			http.Error(w, "gateway: access: check: "+err.Error(), http.StatusBadRequest)
			return
		}
		rep.SURT, _ = access.SURT(u)
		t := req.Time
		if t.IsZero() {
			t = s.cfg.Now()
		}
		// New wraps the archive whenever Access is set; its decisions
		// include robots.txt's under Config.Robots.
		g := s.cfg.Archive.(*guarded)
		d := checkOf(g.decide(ctx, u, t), t)
		rep.Decision = &d
		vs, err := g.inner.Versions(ctx, u)
		if err != nil && !errors.Is(err, archive.ErrNotFound) {
			http.Error(w, "gateway: access: check: "+err.Error(), http.StatusBadGateway)
			return
		}
		for _, v := range vs[max(0, len(vs)-maxCheckVersions):] {
			rep.Versions = append(rep.Versions, checkOf(g.decide(ctx, v.URL, v.Time), v.Time))
		}
	default:
		http.Error(w, "gateway: access: op must be add, remove, list or check", http.StatusBadRequest)
		return
	}
	writeJSON(w, s.log, rep)
}
