package gateway

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Outcomes of a seeded URL (SeedResult.Outcome).
const (
	// SeedQueued: handed to the ring, which delivers it to its owner's
	// crawl queue.
	SeedQueued = "queued"
	// SeedRefused: refused by this node's crawl policy or not a URL; not
	// queued, and so not in the day's URL-seen set (Reason says why and
	// which setting changes it).
	SeedRefused = "refused"
	// SeedFetchedToday: the ring has a capture of it from today's crawl
	// day, or its owner checked it today and found it unchanged; the
	// crawl visits a URL once a day, so it is not queued again before
	// Next.
	SeedFetchedToday = "fetched-today"
)

// SeedResult is what became of one URL of a seed request: the JSON that
// POST /api/seed answers, one per URL, in the order given.
type SeedResult struct {
	URL       string `json:"url"`                 // as given
	Canonical string `json:"canonical,omitempty"` // the URL the ring crawls
	Outcome   string `json:"outcome"`             // SeedQueued, SeedRefused or SeedFetchedToday
	// Reason says why a URL was refused, naming the `herod run` flag that
	// changes it when there is one.
	Reason string `json:"reason,omitempty"`
	// Fetched and Next, for SeedFetchedToday: when today's capture was
	// made and when the next crawl day starts.
	Fetched time.Time `json:"fetched,omitzero"`
	Next    time.Time `json:"next,omitzero"`
}

// SeedReply is the body of a POST /api/seed answer.
type SeedReply struct {
	Results []SeedResult `json:"results"`
}

// GatewayURLFile is the name of the file in a node's data directory that
// holds the base URL of its gateway while it runs, for the operator's
// tools (herod seed, status, purge) given --data alone.
const GatewayURLFile = "gateway-url"

// WriteGatewayURL records base, the gateway's URL, in dir.
func WriteGatewayURL(dir, base string) error {
	path := filepath.Join(dir, GatewayURLFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(base+"\n"), 0o644); err != nil {
		return fmt.Errorf("gateway: record url: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("gateway: record url: %w", err)
	}
	return nil
}

// ErrNoGatewayURL reports a data directory whose node has not recorded
// its gateway's URL: it never ran, or ran before herod recorded it.
var ErrNoGatewayURL = errors.New("gateway: no gateway url recorded")

// ReadGatewayURL returns the gateway URL a node recorded in dir.
func ReadGatewayURL(dir string) (string, error) {
	path := filepath.Join(dir, GatewayURLFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w in %s", ErrNoGatewayURL, dir)
	}
	if err != nil {
		return "", fmt.Errorf("gateway: read url: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("gateway: %s holds %.60q, not a gateway URL", path, s)
	}
	return s, nil
}
