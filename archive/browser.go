package archive

// HeaderBrowser marks the record of a capture made by rendering the page
// in a browser (Capture.Browser) rather than by a plain fetch: the
// response is one the browser received while it rendered a page (the
// page itself or something the page loaded). It is written as
// "WARC-Herod-Browser: 1" and travels with the record through
// replication and export. It is an attested field (attest.go): the
// signature of a capture that carries it covers it.
const HeaderBrowser = "WARC-Herod-Browser"

// browserHeaders returns the WARC field marking c as captured in a
// browser, none when it was not.
func browserHeaders(c *Capture) []warcHeader {
	if !c.Browser {
		return nil
	}
	return []warcHeader{{HeaderBrowser, "1"}}
}

// parseBrowser reads the browser marker of a record into c.
func parseBrowser(h interface{ Get(string) string }, c *Capture) {
	c.Browser = h.Get(HeaderBrowser) == "1"
}
