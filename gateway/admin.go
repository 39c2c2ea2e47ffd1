package gateway

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/herod-archive/herod/internal/canon"
)

// Admin endpoints change the node's state; they answer only requests that
// carry the admin token, a secret kept in the node's data directory that
// the operator's own tools (herod seed) read there. No web page knows it,
// and sending it takes an Authorization header, which a browser never
// sends cross-site without a CORS preflight that the gateway does not
// grant. Requests a browser marks as coming from another origin are
// refused before the token is even looked at.

// AdminTokenFile is the name of the admin token's file in a data directory.
const AdminTokenFile = "admin-token"

// seedPath is the admin endpoint that hands URLs to the crawl.
const seedPath = "/api/seed"

// maxSeedBody bounds the body of a seed request.
const maxSeedBody = 1 << 20

// ErrNoToken reports a data directory without an admin token.
var ErrNoToken = errors.New("gateway: no admin token")

// LoadAdminToken returns the admin token kept in dir, creating it (32
// random bytes, hex, in a file only its owner may read) when there is
// none. A token file that others may read is made private again.
func LoadAdminToken(dir string) (string, error) {
	path := filepath.Join(dir, AdminTokenFile)
	tok, err := ReadAdminToken(dir)
	if err == nil {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return "", fmt.Errorf("gateway: admin token: %w", err)
			}
		}
		return tok, nil
	}
	if !errors.Is(err, ErrNoToken) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("gateway: admin token: %w", err)
	}
	tok = hex.EncodeToString(b)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("gateway: admin token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("gateway: admin token: %w", err)
	}
	_, err = f.WriteString(tok + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("gateway: admin token: %w", err)
	}
	return tok, nil
}

// ReadAdminToken returns the admin token kept in dir; an error wrapping
// ErrNoToken when there is none.
func ReadAdminToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, AdminTokenFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w in %s", ErrNoToken, dir)
	}
	if err != nil {
		return "", fmt.Errorf("gateway: admin token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrNoToken, filepath.Join(dir, AdminTokenFile))
	}
	return tok, nil
}

// crossSite reports whether a browser says r comes from a page of another
// origin (another site, or the content origin, which is the same site as
// the UI when both are one host with two ports): Sec-Fetch-Site other
// than same-origin or none, or an Origin header other than the UI's.
func (s *Server) crossSite(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return true
	}
	o := r.Header.Get("Origin")
	return o != "" && !strings.EqualFold(o, s.uiOrigin(r))
}

// hasToken reports whether r carries the admin token.
func (s *Server) hasToken(r *http.Request) bool {
	if s.cfg.AdminToken == "" {
		return false
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.AdminToken)) == 1
}

// statusAllowed reports whether r may read the node's status (/api/status,
// /ring, /metrics).
func (s *Server) statusAllowed(r *http.Request) bool {
	if s.cfg.PublicStatus {
		return true
	}
	ok := !s.crossSite(r) && (s.hasToken(r) || (local(r) && isIPHost(r)))
	if !ok {
		s.stats.refused.Add(1)
	}
	return ok
}

// serveSeed answers POST /api/seed: URLs to crawl, one per line, from the
// operator (the admin token), never from a page. The answer, 202 Accepted,
// is JSON, a SeedReply: what became of each URL.
func (s *Server) serveSeed(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Seed == nil || s.cfg.AdminToken == "" {
		s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
		return
	}
	if !s.adminAllowed(w, r, "POST URLs, one per line", "herod seed") {
		return
	}
	urls, err := readLines(http.MaxBytesReader(w, r.Body, maxSeedBody))
	if err != nil {
		http.Error(w, "gateway: seed: reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	res, err := s.cfg.Seed(ctx, urls)
	if err != nil {
		http.Error(w, "gateway: seed: "+err.Error(), http.StatusBadGateway)
		return
	}
	b, err := json.Marshal(SeedReply{Results: res})
	if err != nil {
		http.Error(w, "gateway: seed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(append(b, '\n'))
}

// purgePath is the admin endpoint that orders the purge of a peer's
// captures.
const purgePath = "/api/purge"

// servePurge answers POST /api/purge: the body is one peer id, whose
// captures the node removes (and orders removed ring-wide, Config.Purge),
// from the operator (the admin token) only. The reply is JSON
// {"peer": id, "versions": n}, the versions this node removed.
func (s *Server) servePurge(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Purge == nil || s.cfg.AdminToken == "" {
		s.errorPage(w, r, http.StatusNotFound, "There is no page at this address.", "")
		return
	}
	if !s.adminAllowed(w, r, "POST a peer id", "herod purge") {
		return
	}
	lines, err := readLines(http.MaxBytesReader(w, r.Body, 4096))
	if err != nil || len(lines) != 1 {
		http.Error(w, "gateway: purge: the body must be one peer id", http.StatusBadRequest)
		return
	}
	// A purge scans the whole archive: it is not bounded by the
	// gateway's usual deadline, only by the client going away.
	n, err := s.cfg.Purge(r.Context(), lines[0])
	if err != nil {
		http.Error(w, "gateway: purge: "+err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, s.log, map[string]any{"peer": lines[0], "versions": n})
}

// adminAllowed checks an admin request: POST, not cross-site, with the
// admin token. Otherwise it answers the request and returns false; what
// and tool describe the endpoint in the refusals.
func (s *Server) adminAllowed(w http.ResponseWriter, r *http.Request, what, tool string) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "gateway: "+what, http.StatusMethodNotAllowed)
		return false
	}
	if s.crossSite(r) {
		s.stats.refused.Add(1)
		s.log.Warn("gateway: admin request refused: cross-site request", "path", r.URL.Path, "origin", r.Header.Get("Origin"),
			"site", r.Header.Get("Sec-Fetch-Site"), "remote", r.RemoteAddr)
		http.Error(w, "gateway: admin requests are not accepted from web pages", http.StatusForbidden)
		return false
	}
	if !s.hasToken(r) {
		s.stats.refused.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer realm="herod admin"`)
		http.Error(w, "gateway: the admin token is required (Authorization: Bearer, from the data directory's "+
			AdminTokenFile+"; "+tool+" sends it)", http.StatusUnauthorized)
		return false
	}
	return true
}

// fromLoopback reports whether r's connection comes from this machine
// (which a proxy's does too: see local).
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// readLines returns the non-empty, trimmed lines of r.
func readLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), canon.MaxLen+2)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}
