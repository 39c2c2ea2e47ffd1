package archive

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/herod-archive/herod/internal/canon"
)

// Screenshots. A page captured in a browser has a picture of what the
// browser showed: its viewport after the behaviours ran, as a PNG. The
// archive keeps it as a WARC "resource" record (Capture.Resource) whose
// target is the page's URL behind ScreenshotPrefix, "urn:view:", the
// name Browsertrix gives the same picture (its viewport screenshot,
// which its QA compares with replay's); replayweb.page and pywb serve
// such records as any other URL. The record is a version as any other:
// Put stores and signs it, replication carries it under its own key (the
// SHA-1 of its urn: URL), the index lists it, and the gateway finds a
// page's screenshot by asking for ScreenshotURL(page) at the page's date.

// ScreenshotPrefix starts the URL of a page's screenshot record.
const ScreenshotPrefix = "urn:view:"

// ScreenshotType is the media type of a screenshot record.
const ScreenshotType = "image/png"

// ScreenshotURL returns the URL under which the screenshot of the page
// at pageURL (canonical) is stored.
func ScreenshotURL(pageURL string) string { return ScreenshotPrefix + pageURL }

// ScreenshotPage returns the page URL of a screenshot record's URL, and
// whether u is one.
func ScreenshotPage(u string) (string, bool) {
	page, ok := strings.CutPrefix(u, ScreenshotPrefix)
	return page, ok && page != ""
}

// CanonicalURL returns the canonical form of u, a URL the archive keys
// captures by: canon.Canonical of an http(s) URL, or ScreenshotURL of the
// canonical page URL of a screenshot's URL.
func CanonicalURL(u string) (string, error) {
	if page, ok := ScreenshotPage(u); ok {
		c, err := canon.Canonical(page)
		if err != nil {
			return "", fmt.Errorf("screenshot of %w", err)
		}
		return ScreenshotURL(c), nil
	}
	return canon.Canonical(u)
}

// subjectSurt is the SURT that rules about u (URL purges) match: that of
// its page for a screenshot's URL, so that what removes or refuses a page
// removes or refuses its screenshot too.
func subjectSurt(u string) string {
	if page, ok := ScreenshotPage(u); ok {
		return Surt(page)
	}
	return Surt(u)
}

// ScreenshotWindow is how long after a page's capture time its
// screenshot may be dated: the screenshot is taken once the page has
// rendered, within the render's time cap.
const ScreenshotWindow = 5 * time.Minute

// ScreenshotOf returns the screenshot among shots (versions of
// ScreenshotURL(page), oldest first) of the page's version captured at
// t: the first dated from t to ScreenshotWindow later, and before next,
// the page's following version (zero: none); false when there is none.
func ScreenshotOf(shots []Version, t, next time.Time) (Version, bool) {
	end := t.Add(ScreenshotWindow)
	if !next.IsZero() && next.Before(end) {
		end = next
	}
	for _, s := range shots {
		if s.Time.Before(t) {
			continue
		}
		if !s.Time.Before(end) {
			break
		}
		return s, true
	}
	return Version{}, false
}

// ScreenshotCapture returns the capture of the screenshot png of the page
// at pageURL (canonical), taken at at: a resource record of type
// image/png at ScreenshotURL(pageURL), marked as captured in a browser.
// Put stores it as any capture, signed by the store's signer.
func ScreenshotCapture(pageURL string, at time.Time, png []byte) Capture {
	return Capture{
		URL:      ScreenshotURL(pageURL),
		Time:     at,
		Status:   http.StatusOK,
		Header:   http.Header{"Content-Type": {ScreenshotType}},
		Body:     png,
		Browser:  true,
		Resource: true,
	}
}

// resourceType returns the Content-Type of a resource capture's record.
func resourceType(c *Capture) string {
	if t := c.Header.Get("Content-Type"); t != "" {
		return t
	}
	return "application/octet-stream"
}

// checkResource validates what Put stores of a resource capture: status
// 200 (the record has none of its own, and reads back as 200) and a
// Content-Type that fits a WARC field; any other header would be lost.
func checkResource(c *Capture) error {
	if c.Status != http.StatusOK {
		return fmt.Errorf("resource record with status %d, want 200", c.Status)
	}
	for k := range c.Header {
		if http.CanonicalHeaderKey(k) != "Content-Type" {
			return fmt.Errorf("resource record with header %s: only Content-Type is kept", k)
		}
	}
	t := c.Header.Get("Content-Type")
	if len(c.Header["Content-Type"]) > 1 || !httpguts.ValidHeaderFieldValue(t) || strings.ContainsAny(t, "\r\n") {
		return fmt.Errorf("resource record with Content-Type %q", t)
	}
	if _, ok := ScreenshotPage(c.URL); ok && MediaType(t) != ScreenshotType {
		return fmt.Errorf("screenshot of type %q, want %s", t, ScreenshotType)
	}
	return nil
}

// resourceFields returns the status and headers a resource record reads
// back with: 200 and its own Content-Type. The Content-Type of a resource
// is a WARC field, outside the block its signature covers: a screenshot's
// must be ScreenshotType, so that no holder can have its bytes served as
// another type.
func resourceFields(h textproto.MIMEHeader) (int, http.Header, error) {
	if _, ok := ScreenshotPage(h.Get("Warc-Target-Uri")); ok && MediaType(h.Get("Content-Type")) != ScreenshotType {
		return 0, nil, malformed("screenshot of type %q", h.Get("Content-Type"))
	}
	hdr := http.Header{}
	if t := h.Get("Content-Type"); t != "" {
		hdr.Set("Content-Type", t)
	}
	return http.StatusOK, hdr, nil
}
