package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/gateway"
)

// TestSeedSendsToken runs herod seed against a gateway with an admin
// token: without the data directory's token it does not even ask; with it
// the gateway accepts the URLs.
func TestSeedSendsToken(t *testing.T) {
	dir := t.TempDir()
	token, err := gateway.LoadAdminToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seeded []string
	gw, err := gateway.New(gateway.Config{
		Archive: emptyArchive{}, UIOrigin: "http://gw.test", ContentOrigin: "http://content.test",
		AdminToken: token,
		Seed: func(_ context.Context, urls []string) error {
			seeded = append(seeded, urls...)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	if _, err := run(t, seedCmd, "--node", srv.URL, "--data", t.TempDir(), "http://a.example/"); err == nil ||
		!strings.Contains(err.Error(), "no admin token") {
		t.Errorf("seed without a token: %v", err)
	}
	out, err := run(t, seedCmd, "--node", srv.URL, "--data", dir, "http://a.example/", "http://b.example/")
	if err != nil || !strings.Contains(out, "seeded 2 URL(s)") || strings.Join(seeded, " ") != "http://a.example/ http://b.example/" {
		t.Errorf("seed: %q, %v; seeded %q", out, err, seeded)
	}
	// The gateway refuses the same request without the token.
	resp, err := http.Post(srv.URL+"/api/seed", "text/plain", strings.NewReader("http://c.example/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(seeded) != 2 {
		t.Errorf("seed without the token: %s", resp.Status)
	}
}

// emptyArchive is a gateway.Archive with nothing in it.
type emptyArchive struct{}

func (emptyArchive) Versions(context.Context, string) ([]archive.Version, error) { return nil, nil }

func (emptyArchive) Get(context.Context, string, time.Time) (archive.Version, *archive.Capture, error) {
	return archive.Version{}, nil, archive.ErrNotFound
}
