package sampleweb

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"strconv"
	"strings"
)

// assets.go generates the non-HTML resources of a host: images (real PNG,
// GIF and SVG bytes), stylesheets that reference images with url(), scripts
// and robots.txt. They never change from day to day.

// disallowed is the path prefix every host's robots.txt disallows. Pages
// link into it, so a crawler that ignores robots.txt shows in Requests.
const disallowed = "/private/"

func (m *model) robots() []byte {
	if m.plain {
		return []byte("User-agent: *\nDisallow:\n")
	}
	delay := ""
	if m.crawlDelay > 0 {
		delay = "Crawl-delay: " + strconv.Itoa(m.crawlDelay) + "\n"
	}
	return []byte("# sample web robots.txt\nUser-agent: *\nDisallow: " + disallowed + "\n" + delay + "\nUser-agent: herod-test-banned\nDisallow: /\n")
}

// image returns the bytes and content type of pool image k of host h, or
// of the logo when k < 0.
func (m *model) image(h, k int) ([]byte, string) {
	r := rng(m.seed, tagAsset, uint64(h), uint64(k+1))
	size := 16 + r.IntN(49)
	fg := color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 255}
	bg := color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 255}
	stripe := 2 + r.IntN(6)
	if k >= 0 && k%3 == 2 {
		var b strings.Builder
		fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", size, size, size, size)
		fmt.Fprintf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\"/>\n", size, size, bg.R, bg.G, bg.B)
		for i := 0; i < size; i += 2 * stripe {
			fmt.Fprintf(&b, "<rect x=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\"/>\n", i, stripe, size, fg.R, fg.G, fg.B)
		}
		fmt.Fprintf(&b, "<circle cx=\"%d\" cy=\"%d\" r=\"%d\" fill=\"none\" stroke=\"black\"/>\n</svg>\n", size/2, size/2, size/3)
		return []byte(b.String()), "image/svg+xml"
	}
	pix := func(x, y int) color.RGBA {
		if ((x+y)/stripe)%2 == 0 || (x*y+int(r.Uint32()%7))%11 == 0 {
			return fg
		}
		return bg
	}
	var buf bytes.Buffer
	if k >= 0 && k%3 == 1 {
		img := image.NewPaletted(image.Rect(0, 0, size, size), color.Palette{bg, fg})
		for y := range size {
			for x := range size {
				if pix(x, y) == fg {
					img.SetColorIndex(x, y, 1)
				}
			}
		}
		if err := gif.Encode(&buf, img, nil); err != nil {
			panic(fmt.Sprintf("sampleweb: gif encode: %v", err)) // in-memory encode of a valid image cannot fail
		}
		return buf.Bytes(), "image/gif"
	}
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			img.SetRGBA(x, y, pix(x, y))
		}
	}
	if err := png.Encode(&buf, img); err != nil {
		panic(fmt.Sprintf("sampleweb: png encode: %v", err)) // in-memory encode of a valid image cannot fail
	}
	return buf.Bytes(), "image/png"
}

// stylesheet returns site.css (sec < 0) or a section's stylesheet. Every
// url() target is also an <img> of every page that uses the stylesheet, so
// the set of reachable URLs is the same for crawlers that parse CSS and
// for those that do not.
func (m *model) stylesheet(h, sec int) []byte {
	r := rng(m.seed, tagAsset, uint64(h), 1000+uint64(sec+1))
	var b strings.Builder
	if sec < 0 {
		b.WriteString("/* sample web: site stylesheet */\nbody { font-family: Georgia, serif; margin: 0 auto; max-width: 48em; }\n")
		b.WriteString("header { background: #eee url(/img/logo.png) no-repeat right top; padding: 1em; }\n")
		b.WriteString("nav ul { list-style: none; padding: 0; }\nnav li { display: inline; margin-right: 1em; }\nfigure img { max-width: 100%; }\n")
	} else {
		fmt.Fprintf(&b, "/* sample web: %s section */\n", sections[sec])
		fmt.Fprintf(&b, "main { background-image: url(\"..%s\"); }\n", imagePath(sectionImage(sec)))
	}
	for i := range 4 + r.IntN(8) {
		fmt.Fprintf(&b, ".c%d-%d { color: #%06x; margin: %dpx %dpx; }\n", sec+1, i, r.IntN(1<<24), r.IntN(20), r.IntN(20))
	}
	return []byte(b.String())
}

// script returns app.js (sec < 0) or a section's script.
func (m *model) script(h, sec int) []byte {
	r := rng(m.seed, tagAsset, uint64(h), 2000+uint64(sec+1))
	var b strings.Builder
	name := "app"
	if sec >= 0 {
		name = sections[sec]
	}
	fmt.Fprintf(&b, "// sample web: %s.js\n(function () {\n  'use strict';\n  var words = [", name)
	for i := range 8 + r.IntN(16) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", m.vocab.words[16+r.IntN(len(m.vocab.words)-16)])
	}
	b.WriteString("];\n  document.addEventListener('DOMContentLoaded', function () {\n")
	b.WriteString("    document.body.setAttribute('data-words', String(words.length));\n  });\n})();\n")
	return []byte(b.String())
}
