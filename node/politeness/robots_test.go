package politeness

import (
	"bufio"
	"bytes"
	"strings"
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
	got, err := RobotsKey("http://example.org")
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
		RobotsRequest{Origin: "http://example.org"},
		RobotsReply{Record: crawl.RobotsRecord{Status: 200, Body: []byte("User-agent: *\nDisallow: /private/\n"), Fetched: time.Unix(1, 0)}},
		RobotsReply{Error: "boom"},
	} {
		var buf bytes.Buffer
		if err := wire.WriteJSON(&buf, v); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		now := time.Unix(1_700_000_000, 0)
		var req RobotsRequest
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), maxRobotsRequest, &req); err == nil && validRobotsOrigin(req.Origin) == nil {
			if _, err := RobotsKey(req.Origin); err != nil {
				t.Fatalf("valid origin %q has no robots key: %v", req.Origin, err)
			}
		}
		var rep RobotsReply
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
