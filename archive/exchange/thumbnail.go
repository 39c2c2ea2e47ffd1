package exchange

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/herod-archive/herod/archive"
)

// Page thumbnails. A page captured in a browser has a screenshot, the
// resource record archive.ScreenshotURL(page) ("urn:view:<page>"), which
// a WACZ export's selection does not name (it selects pages by their
// URLs). With WACZOptions.Screenshot set, the WACZ writer asks for the
// screenshot of each HTML page captured in a browser and writes, after
// the page's record, the screenshot's record as the archive holds it
// (signed by its capturer) and a thumbnail of it: a resource record
// "urn:thumbnail:<page>", image/png, at most ThumbnailWidth wide, which
// is where replayweb.page and Browsertrix look for a page's thumbnail
// (pages.jsonl has no field for it). The thumbnail is the exporter's
// work, unsigned; it names the screenshot it was made from
// (WARC-Refers-To).

// ThumbnailPrefix starts the URL of a page's thumbnail record.
const ThumbnailPrefix = "urn:thumbnail:"

// ThumbnailWidth bounds the width of a thumbnail, in pixels.
const ThumbnailWidth = 400

// ScreenshotFunc returns the screenshot of the page captured at t, a
// decoded resource capture (archive.ScreenshotCapture), or nil when it
// has none; an error leaves the page without one.
type ScreenshotFunc func(page string, t time.Time) (*archive.Capture, error)

// ScreenshotArchive is what ScreenshotsOf reads: archive.Store, or the
// gateway's ring-wide archive.
type ScreenshotArchive interface {
	Versions(ctx context.Context, url string) ([]archive.Version, error)
	Get(ctx context.Context, url string, t time.Time) (archive.Version, *archive.Capture, error)
}

// ScreenshotsOf returns the ScreenshotFunc of a: the screenshot
// archive.ScreenshotOf chooses for the page's capture time.
func ScreenshotsOf(ctx context.Context, a ScreenshotArchive) ScreenshotFunc {
	return func(page string, t time.Time) (*archive.Capture, error) {
		u := archive.ScreenshotURL(page)
		shots, err := a.Versions(ctx, u)
		if err != nil {
			return nil, err
		}
		shot, ok := archive.ScreenshotOf(shots, t, time.Time{})
		if !ok {
			return nil, nil
		}
		v, c, err := a.Get(ctx, u, shot.Time)
		if err != nil {
			return nil, err
		}
		if !v.Time.Equal(shot.Time) || v.Digest != shot.Digest || !c.Resource {
			return nil, fmt.Errorf("screenshot of %s at %s: the archive gave another capture", page, shot.Time)
		}
		return c, nil
	}
}

// Thumbnail returns a PNG of the image img scaled down, by averaging
// boxes of pixels, to at most width pixels wide (img itself, encoded as
// PNG, when it is not wider).
func Thumbnail(img image.Image, width int) ([]byte, error) {
	b := img.Bounds()
	f := (b.Dx() + width - 1) / max(width, 1)
	if f < 1 {
		f = 1
	}
	w, h := max(b.Dx()/f, 1), max(b.Dy()/f, 1)
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			var r, g, bl, a, n uint64
			for dy := range f {
				for dx := range f {
					px, py := b.Min.X+x*f+dx, b.Min.Y+y*f+dy
					if px >= b.Max.X || py >= b.Max.Y {
						continue
					}
					cr, cg, cb, ca := img.At(px, py).RGBA()
					r, g, bl, a, n = r+uint64(cr), g+uint64(cg), bl+uint64(cb), a+uint64(ca), n+1
				}
			}
			if n > 0 {
				out.Set(x, y, color.RGBA64{uint16(r / n), uint16(g / n), uint16(bl / n), uint16(a / n)})
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// thumbnailRecord returns the gzip member of the thumbnail record of
// page, made of the screenshot shot whose record's WARC-Record-ID is
// refersTo.
func thumbnailRecord(page string, shot *archive.Capture, refersTo string) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(shot.Body))
	if err != nil {
		return nil, fmt.Errorf("screenshot of %s: %w", page, err)
	}
	thumb, err := Thumbnail(img, ThumbnailWidth)
	if err != nil {
		return nil, fmt.Errorf("thumbnail of %s: %w", page, err)
	}
	u := ThumbnailPrefix + page
	date := shot.Time.UTC().Format(time.RFC3339Nano)
	digest := sha1.Sum(thumb)
	d := "sha1:" + base32.StdEncoding.EncodeToString(digest[:])
	id := sha1.Sum([]byte("thumbnail\x00" + u + "\x00" + date + "\x00" + d))
	id[6], id[8] = id[6]&0x0f|0x50, id[8]&0x3f|0x80
	var plain bytes.Buffer
	fmt.Fprintf(&plain, "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:%x-%x-%x-%x-%x>\r\nWARC-Date: %s\r\n"+
		"WARC-Target-URI: %s\r\nWARC-Refers-To: %s\r\nContent-Type: image/png\r\nWARC-Payload-Digest: %s\r\nWARC-Block-Digest: %s\r\n"+
		"Content-Length: %d\r\n\r\n", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16], date, u, refersTo, d, d, len(thumb))
	plain.Write(thumb)
	plain.WriteString("\r\n\r\n")
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(plain.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
