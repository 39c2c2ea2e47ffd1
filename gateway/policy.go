package gateway

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// Policies of the two origins: what a replayed page may load, who may
// frame it, which archived headers act on the browser (none but a few
// that describe the body), and what the UI origin's own pages allow.

// contentCSP returns the Content-Security-Policy of replies on the content
// origin: everything from the content origin itself (the archive) plus
// inline, data: and blob: resources, nothing from the live web (fetch,
// XHR, WebSocket, beacons, images, styles, fonts, frames alike), no
// plugins, forms within the archive (and the banner's search box, to the
// UI origin's /search), <base> within the archive, and framing only by the
// archive's own pages and the UI origin's framed replay page.
func contentCSP(ui string) string {
	return "default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; object-src 'none'; base-uri 'self'; " +
		"form-action 'self' " + ui + "/search; frame-ancestors 'self' " + ui
}

// sandboxCSP is added to contentCSP for replies that are documents of
// their own but not rewritten HTML (id_ payloads, SVG, XML, text, error
// pages): they run no script, so nothing on the content origin runs a
// script the replay script did not start first.
const sandboxCSP = "; sandbox allow-forms allow-popups allow-popups-to-escape-sandbox"

// uiCSP returns the Content-Security-Policy of the UI origin's pages: its
// own scripts and styles (and inline styles), ui.js inline by its hash
// (framePage), frames from the content origin only, never framed itself.
func uiCSP(content string) string {
	return "default-src 'self'; script-src 'self' " + uiJSSource + "; style-src 'self' 'unsafe-inline'; img-src 'self' data: " + content + "; frame-src " + content +
		"; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// setUIHeaders sets the security headers of every UI origin reply.
func setUIHeaders(h http.Header, content string) {
	h.Set("Content-Security-Policy", uiCSP(content))
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

// setContentHeaders sets the security headers every content origin reply
// carries; sandboxed adds sandboxCSP. Documents that run scripts (not
// sandboxed) also get a Referrer-Policy and a Permissions-Policy; the
// other replies, mostly images and style sheets, run nothing they apply to.
func setContentHeaders(h http.Header, ui string, sandboxed bool) {
	csp := contentCSP(ui)
	if sandboxed {
		h.Set("Content-Security-Policy", csp+sandboxCSP)
		return
	}
	h.Set("Content-Security-Policy", csp)
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=(), serial=(), hid=()")
}

// sandboxFramed makes a content origin document of a framing gateway
// sandbox itself as the content frame's sandbox attribute does
// (frameSandbox), unless its CSP already holds a stricter sandbox. Every
// document of the content origin then carries its sandbox in its own
// headers, so the frame of a document the browser shows itself, which
// has no sandbox attribute (shownByBrowser), stays sandboxed whatever it
// is navigated to.
func sandboxFramed(h http.Header) {
	csp := h.Get("Content-Security-Policy")
	if csp != "" && !strings.Contains(csp, "; sandbox") {
		h.Set("Content-Security-Policy", csp+"; sandbox "+frameSandbox)
	}
}

// scriptedDocument reports whether a reply of media type mt, rewritten
// and loaded as a document, runs the replay script: HTML does, everything
// else (SVG, XML, text, images) is sandboxed instead.
func scriptedDocument(mt string) bool {
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// passHeaders are archived response headers replayed under their own name:
// they describe the body. Location is rewritten by the caller.
var passHeaders = map[string]bool{
	"Content-Type": true, "Content-Language": true, "Content-Disposition": true, "Location": true,
}

// dropHeaders describe the original connection or encoding, which the
// gateway's own response replaces.
var dropHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Transfer-Encoding": true, "Te": true,
	"Trailer": true, "Upgrade": true, "Content-Length": true, "Content-Encoding": true,
	"Proxy-Authenticate": true, "Proxy-Connection": true,
}

// copyHeaders copies archived headers to dst: those that describe the body
// under their own name, hop-by-hop ones not at all, and every other one
// as X-Archive-Orig-<name>: Set-Cookie, Content-Security-Policy,
// Strict-Transport-Security, Clear-Site-Data, Refresh, Link (preload),
// Service-Worker-Allowed, caching and CORS headers are kept for the
// record but never act on the browser.
func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case dropHeaders[ck]:
		case passHeaders[ck]:
			dst[ck] = append([]string(nil), vs...)
		default:
			dst["X-Archive-Orig-"+ck] = append([]string(nil), vs...)
		}
	}
}

// executableTypes are media types of programs a browser would run or hand
// to the system if it opened them.
var executableTypes = map[string]bool{
	"application/octet-stream": true, "application/x-msdownload": true, "application/x-msdos-program": true,
	"application/x-msi": true, "application/x-ms-installer": true, "application/vnd.microsoft.portable-executable": true,
	"application/x-executable": true, "application/x-elf": true, "application/x-sharedlib": true,
	"application/x-mach-binary": true, "application/x-sh": true, "application/x-shellscript": true,
	"application/x-bat": true, "application/java-archive": true, "application/x-java-archive": true,
	"application/vnd.android.package-archive": true, "application/x-apple-diskimage": true,
	"application/x-newton-compatible-pkg": true, "application/vnd.debian.binary-package": true,
	"application/x-debian-package": true, "application/x-rpm": true, "application/x-redhat-package-manager": true,
	"application/hta": true, "application/x-ms-shortcut": true, "application/x-msdos-windows": true,
}

// executableExts are file name extensions of programs and installers.
var executableExts = map[string]bool{
	".exe": true, ".msi": true, ".dll": true, ".com": true, ".scr": true, ".bat": true, ".cmd": true,
	".ps1": true, ".vbs": true, ".wsf": true, ".hta": true, ".lnk": true, ".jar": true, ".apk": true,
	".dmg": true, ".pkg": true, ".deb": true, ".rpm": true, ".appimage": true, ".sh": true, ".run": true,
	".bin": true, ".elf": true, ".msix": true, ".appx": true,
}

// executable reports whether a capture of rawURL with media type mt is a
// program: by its type or by its file name.
func executable(rawURL, mt string) bool {
	if executableTypes[mt] {
		return true
	}
	p := rawURL
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return executableExts[strings.ToLower(path.Ext(p))]
}

// setDownload makes a reply a download that the browser neither renders
// nor sniffs: Content-Disposition attachment with the URL's file name.
func setDownload(h http.Header, rawURL string) {
	p := rawURL
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	name := path.Base(p)
	if name == "." || name == "/" || strings.Contains(name, ":") {
		name = "download"
	}
	cd := mime.FormatMediaType("attachment", map[string]string{"filename": name})
	if cd == "" {
		cd = "attachment"
	}
	h.Set("Content-Disposition", cd)
	h.Set("X-Content-Type-Options", "nosniff")
}
