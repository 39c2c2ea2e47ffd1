package exchange

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/archive"
	"github.com/herod-archive/herod/archive/cdx"
)

const siteApp = "http://site.example/app"

// screenshotPNG is an 800x500 PNG, half blue, half white.
func screenshotPNG(t testing.TB) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 800, 500))
	for y := range 500 {
		for x := range 800 {
			c := color.RGBA{255, 255, 255, 255}
			if y < 250 {
				c = color.RGBA{0, 0, 255, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// browserStore holds siteApp captured in a browser with its screenshot,
// and siteHome fetched.
func browserStore(t testing.TB) *archive.Store {
	s, err := archive.Open(t.TempDir(), archive.Options{NoSync: true, Signer: newSigner()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	for _, c := range []archive.Capture{
		{URL: siteHome, Time: t0, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(homeHTML())},
		{URL: siteApp, Time: t0, Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("<title>App</title>rendered"), Browser: true},
		archive.ScreenshotCapture(siteApp, t0.Add(2*time.Second), screenshotPNG(t)),
		archive.ScreenshotCapture(siteApp, t0.Add(day), screenshotPNG(t)), // unchanged: a revisit
	} {
		if _, _, err := s.Put(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestWACZScreenshot: with WACZOptions.Screenshot, the WACZ of a site's
// prefix (which does not select the urn:view: record) holds, after the
// page captured in a browser, its screenshot as the archive signed it and
// its thumbnail at urn:thumbnail:<page>, at most ThumbnailWidth wide,
// both indexed; the fetched page gets none. An export that names the
// screenshot itself gets the thumbnail alone.
func TestWACZScreenshot(t *testing.T) {
	ctx := context.Background()
	s := browserStore(t)
	for _, tc := range []struct {
		name     string
		q        cdx.Query
		views    int // urn:view: records in the WARC
		revisits int // the screenshot's, when the selection names it
	}{
		{"prefix", cdx.Query{URL: "http://site.example/", Match: cdx.MatchPrefix}, 1, 0},
		{"all", cdx.Query{Match: cdx.MatchPrefix}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warc bytes.Buffer
			if _, err := s.Export(ctx, archive.ExportOptions{Query: tc.q.Store(), Revisits: true}, &warc, nil); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			z := NewWACZ(&out, WACZOptions{Screenshot: ScreenshotsOf(ctx, s)})
			st, err := z.AddWARC(&warc)
			if err != nil {
				t.Fatal(err)
			}
			if err := z.Close(); err != nil {
				t.Fatal(err)
			}
			if st.Screenshots != 1 || st.Resources != 2 || st.ScreenshotErrors != 0 || st.Pages != 2 || st.Revisits != tc.revisits {
				t.Fatalf("stats %+v, want 1 screenshot, 2 resources, 2 pages, %d revisits", st, tc.revisits)
			}
			zr, err := zip.NewReader(bytes.NewReader(out.Bytes()), int64(out.Len()))
			if err != nil {
				t.Fatal(err)
			}
			var index string
			var records []*archive.Record
			for _, f := range zr.File {
				switch f.Name {
				case IndexPath:
					index = string(readEntry(t, f))
				case WARCPath:
					gz, err := gzip.NewReader(bytes.NewReader(readEntry(t, f)))
					if err != nil {
						t.Fatal(err)
					}
					br := bufio.NewReader(gz)
					for {
						rec, err := archive.ReadRecord(br)
						if err != nil {
							break
						}
						records = append(records, rec)
					}
				}
			}
			views := 0
			var thumb []byte
			for _, rec := range records {
				switch u := rec.Header.Get("Warc-Target-Uri"); u {
				case archive.ScreenshotURL(siteApp):
					if rec.Header.Get("Warc-Type") == "revisit" {
						continue // counted in the stats
					}
					views++
					if rec.Header.Get(archive.HeaderPeer) == "" || rec.Header.Get("Warc-Type") != "resource" {
						t.Errorf("screenshot record without its signature or type: %v", rec.Header)
					}
				case ThumbnailPrefix + siteApp:
					thumb = rec.Block
					if !strings.HasPrefix(rec.Header.Get("Warc-Refers-To"), "<urn:uuid:") || rec.Header.Get("Content-Type") != "image/png" {
						t.Errorf("thumbnail record fields: %v", rec.Header)
					}
				}
			}
			if views != tc.views || thumb == nil {
				t.Fatalf("%d screenshot records (want %d), thumbnail %v", views, tc.views, thumb != nil)
			}
			img, err := png.Decode(bytes.NewReader(thumb))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 250 {
				t.Errorf("thumbnail %v, want 400x250", b)
			}
			if r, g, b, _ := img.At(10, 10).RGBA(); r != 0 || g != 0 || b != 0xffff {
				t.Errorf("thumbnail's top is not the screenshot's blue: %d %d %d", r, g, b)
			}
			for _, u := range []string{`"url":"urn:view:` + siteApp + `","mime":"image/png"`, `"url":"urn:thumbnail:` + siteApp + `","mime":"image/png"`} {
				if !strings.Contains(index, u) {
					t.Errorf("index lacks %s:\n%s", u, index)
				}
			}
		})
	}
}
