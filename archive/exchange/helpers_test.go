package exchange

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herod-archive/herod/archive"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// testSigner signs with an Ed25519 key, as a node's identity key does.
type testSigner struct {
	priv ed25519.PrivateKey
}

func newSigner() testSigner {
	_, priv, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	return testSigner{priv: priv}
}

func (s testSigner) Peer() string                    { return "12D3KooWTestPeer" }
func (s testSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// Site pages of the fixture.
const (
	siteHome  = "http://site.example/"
	siteAbout = "http://site.example/about.html"
	siteLogo  = "http://site.example/logo.png"
	homeText  = "The quick archived fox jumps over the ring"
	homeTitle = "Herod WACZ fixture"
)

func homeHTML() string {
	return `<!doctype html><html><head><title>` + homeTitle + `</title><style>p{color:red}</style></head>
<body><h1 id="t">` + homeText + `</h1><img id="logo" src="/logo.png" width="40" height="30">
<p><a href="about.html#x">About</a> <a href="https://other.example/">Other</a> <a href="mailto:a@b">mail</a></p>
<script>var hidden = "not text";</script></body></html>`
}

// logoPNG is a 40x30 PNG.
func logoPNG(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for x := 0; x < 40; x++ {
		for y := 0; y < 30; y++ {
			img.Set(x, y, color.RGBA{200, uint8(x * 6), uint8(y * 8), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fixtureStore holds the site crawled on three days: day 0 everything,
// day 1 the home page unchanged (a revisit), day 2 a new about page.
func fixtureStore(t testing.TB) *archive.Store { return fixtureStoreWith(t, false) }

// fixtureStoreWith is fixtureStore whose captures carry, with requests,
// the request head sent for each (Capture.Request).
func fixtureStoreWith(t testing.TB, requests bool) *archive.Store {
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, Signer: newSigner()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	put := func(u string, at time.Time, ct string, body []byte) {
		t.Helper()
		c := archive.Capture{URL: u, Time: at, Status: 200, Header: http.Header{"Content-Type": {ct}}, Body: body}
		if requests {
			c.Request = []byte("GET " + strings.TrimPrefix(u, "http://site.example") + " HTTP/1.1\r\nHost: site.example\r\nAccept: */*\r\n\r\n")
		}
		if _, _, err := s.Put(context.Background(), c); err != nil {
			t.Fatalf("put %s: %v", u, err)
		}
	}
	html := "text/html; charset=utf-8"
	put(siteHome, t0, html, []byte(homeHTML()))
	put(siteLogo, t0.Add(time.Second), "image/png", logoPNG(t))
	put(siteAbout, t0.Add(2*time.Second), html, []byte(`<html><title>About</title><body>About v1 <a href="/">home</a></body></html>`))
	put(siteHome, t0.Add(day), html, []byte(homeHTML())) // unchanged: recorded as a check
	put(siteAbout, t0.Add(2*day), html, []byte(`<html><title>About</title><body>About v2 <a href="/">home</a> <img src="logo.png"></body></html>`))
	return s
}

// exportWARC exports everything in s with revisits.
func exportWARC(t testing.TB, s *archive.Store) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := s.Export(context.Background(), archive.ExportOptions{Revisits: true}, &b, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
