package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/wire"
)

func TestValidRobotsOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"http://example.org", true},
		{"https://example.org", true},
		{"http://127.0.0.2:8080", true},
		{"", false},
		{"example.org", false},
		{"ftp://example.org", false},
		{"http://example.org/", false},
		{"http://example.org/robots.txt", false},
		{"http://example.org?x", false},
		{"http://" + strings.Repeat("a", canon.MaxLen), false},
		{"http://[::1", false},
	} {
		if err := validRobotsOrigin(tc.origin); (err == nil) != tc.ok {
			t.Errorf("validRobotsOrigin(%q) = %v, want ok %v", tc.origin, err, tc.ok)
		}
	}
}

func TestCheckRecord(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name        string
		rec         crawl.RobotsRecord
		ok          bool
		wantFetched time.Time
	}{
		{"ok", crawl.RobotsRecord{Status: 200, Body: []byte("User-agent: *\n"), Fetched: now.Add(-time.Hour)}, true, now.Add(-time.Hour)},
		{"unreachable", crawl.RobotsRecord{Status: 0, Fetched: now.Add(-time.Minute)}, true, now.Add(-time.Minute)},
		{"future fetch clamped", crawl.RobotsRecord{Status: 404, Fetched: now.Add(5 * time.Hour)}, true, now},
		{"no fetch time", crawl.RobotsRecord{Status: 503}, true, now},
		{"bad status", crawl.RobotsRecord{Status: 42}, false, time.Time{}},
		{"huge status", crawl.RobotsRecord{Status: 1000}, false, time.Time{}},
		{"huge body", crawl.RobotsRecord{Status: 200, Body: make([]byte, crawl.RobotsMaxBytes+1)}, false, time.Time{}},
	} {
		got, err := checkRobotsRecord(tc.rec, now)
		if (err == nil) != tc.ok {
			t.Errorf("%s: checkRobotsRecord = %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		if tc.ok && !got.Fetched.Equal(tc.wantFetched) {
			t.Errorf("%s: fetched %s, want %s", tc.name, got.Fetched, tc.wantFetched)
		}
	}
}

func TestRobotsKeyIsCanonicalURLKey(t *testing.T) {
	got, err := robotsKey("http://example.org")
	if err != nil {
		t.Fatal(err)
	}
	want, err := canon.Key("HTTP://Example.ORG:80/robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("robotsKey = %s, want the key of the canonical robots.txt URL %s", got, want)
	}
}

// FuzzRobotsFrames feeds arbitrary frames to the robots protocol's
// decoders: no panics, and whatever passes the checks is within limits.
func FuzzRobotsFrames(f *testing.F) {
	for _, v := range []any{
		robotsRequest{Origin: "http://example.org"},
		robotsReply{Record: crawl.RobotsRecord{Status: 200, Body: []byte("User-agent: *\nDisallow: /private/\n"), Fetched: time.Unix(1, 0)}},
		robotsReply{Error: "boom"},
	} {
		var buf bytes.Buffer
		if err := wire.WriteJSON(&buf, v); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		now := time.Unix(1_700_000_000, 0)
		var req robotsRequest
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), maxRobotsRequest, &req); err == nil && validRobotsOrigin(req.Origin) == nil {
			if _, err := robotsKey(req.Origin); err != nil {
				t.Fatalf("valid origin %q has no robots key: %v", req.Origin, err)
			}
		}
		var rep robotsReply
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), maxRobotsFrame, &rep); err == nil {
			if rec, err := checkRobotsRecord(rep.Record, now); err == nil {
				if len(rec.Body) > crawl.RobotsMaxBytes || rec.Fetched.After(now) {
					t.Fatalf("bad record passed: status %d, %d bytes, fetched %s", rec.Status, len(rec.Body), rec.Fetched)
				}
				_ = crawl.ParseRobots(rec, "herod")
			}
		}
	})
}

// TestRobotsProtocolRefusesInternalAndUnowned: a peer asking a node for
// the robots.txt of an origin gets it only when the ring gives that
// origin's robots.txt to the node, and the node's fetch refuses internal
// addresses (its crawl config allows none here): a loopback server never
// sees a request, and nothing of it comes back.
func TestRobotsProtocolRefusesInternalAndUnowned(t *testing.T) {
	if testing.Short() {
		t.Skip("real libp2p nodes in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "User-agent: *\nDisallow: /admin/keys\n")
	}))
	defer srv.Close()
	lr, err := StartLocalRing(ctx, t.TempDir(), 2, Config{VirtualServers: 2, StabilizeInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	if err := lr.WaitStable(ctx); err != nil {
		t.Fatal(err)
	}
	origin := srv.URL
	key, err := robotsKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	owner := lr.Owner(key)
	other := lr.Nodes[0]
	if other == owner {
		other = lr.Nodes[1]
	}
	asker := other.cfg.Crawl.Robots.(*politeness)
	// The owner is asked: it fetches, and its fetch is refused.
	if rec, err := asker.askRobots(ctx, owner.Contact(), origin); err == nil || !strings.Contains(err.Error(), "internal address") {
		t.Fatalf("owner asked for a loopback origin: %+v, %v; want an internal-address refusal", rec, err)
	}
	// The non-owner is asked (by the owner): refused before any fetch.
	back := owner.cfg.Crawl.Robots.(*politeness)
	if rec, err := back.askRobots(ctx, other.Contact(), origin); err == nil || !strings.Contains(err.Error(), errRobotsNotOwned.Error()) {
		t.Fatalf("non-owner asked: %+v, %v; want %v", rec, err, errRobotsNotOwned)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests", n)
	}
	if got := other.PolitenessStats().RobotsNotOwned; got != 1 {
		t.Fatalf("RobotsNotOwned = %d, want 1", got)
	}
}
