package crawl

import (
	"bytes"
	"context"
	"errors"
	"mime"
	"net/http"
	"strings"

	"github.com/herod-archive/herod/archive"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// A page may ask archives not to keep it: X-Robots-Tag: noarchive, or
// <meta name="robots" content="noarchive"> in its head (either one
// naming the crawler's product token instead of all robots). Unless
// Config.KeepNoArchive is set, the crawler honours it by archiving
// nothing of that answer: no version is stored, so no surface of any
// node can show, list or export it. The URL's crawl state is kept
// (validators, digest, links), its links are followed (noarchive is not
// nofollow), and it is counted as KindNoArchive. The check is made once,
// at fetch time; earlier captures, made before the page said so, are
// not touched (an access rule or --replay-robots hides those).

// KindNoArchive counts answers not archived because they asked so.
const KindNoArchive = "noarchive"

// noArchiveScan bounds the bytes of an HTML body searched for the meta
// tag: the head of any real page.
const noArchiveScan = 256 << 10

// noArchive reports whether a response asks agent (a lower-case product
// token) not to archive it, by its headers or, for HTML, its meta tags.
func noArchive(h http.Header, ctype string, body []byte, agent string) bool {
	for _, v := range h.Values("X-Robots-Tag") {
		if robotsTagNoArchive(v, agent) {
			return true
		}
	}
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil || (mt != "text/html" && mt != "application/xhtml+xml") {
		return false
	}
	return metaNoArchive(body, agent)
}

// robotsTagNoArchive reports whether one X-Robots-Tag value holds
// noarchive for all robots or for agent ("herod: noarchive").
func robotsTagNoArchive(v, agent string) bool {
	v = strings.ToLower(v)
	if name, rest, ok := strings.Cut(v, ":"); ok {
		name = strings.TrimSpace(name)
		// "unavailable_after: <date>" is a directive, not an agent; an
		// agent name is one word before the first directive.
		if name != "unavailable_after" && !strings.ContainsAny(name, ", ") {
			if name != agent {
				return false
			}
			v = rest
		}
	}
	return hasDirective(v, "noarchive")
}

// hasDirective reports whether a comma (or space) separated list of
// robots directives holds d.
func hasDirective(list, d string) bool {
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if f == d {
			return true
		}
	}
	return false
}

// metaNoArchive reports whether an HTML document's head holds a robots
// meta tag (name "robots" or agent) with noarchive. It reads up to the
// end of the head or the first element that belongs to the body (which
// ends the head in HTML), at most noArchiveScan bytes.
func metaNoArchive(body []byte, agent string) bool {
	z := html.NewTokenizer(bytes.NewReader(body[:min(len(body), noArchiveScan)]))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch atom.Lookup(name) {
			case atom.Html, atom.Head, atom.Title, atom.Link, atom.Script, atom.Style, atom.Base, atom.Noscript, atom.Template:
			default: // any other element starts the body
				return false
			case atom.Meta:
				var who, content string
				for hasAttr {
					var k, v []byte
					k, v, hasAttr = z.TagAttr()
					switch string(k) {
					case "name":
						who = strings.ToLower(strings.TrimSpace(string(v)))
					case "content":
						content = strings.ToLower(string(v))
					}
				}
				if (who == "robots" || who == agent) && hasDirective(content, "noarchive") {
					return true
				}
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.Head {
				return false
			}
		}
	}
}

// errNoArchive is the counted reason of a KindNoArchive answer.
var errNoArchive = errors.New("the answer asks archives not to keep it (noarchive)")

// skipNoArchive finishes a changed answer that asked not to be archived:
// its crawl state (next) is recorded, no version.
func (c *Crawler) skipNoArchive(ctx context.Context, raw string, next archive.CrawlState, fwdErr error) outcome {
	if err := c.a.SetState(ctx, raw, next); err != nil {
		return c.archiveErr(ctx, raw, err)
	}
	if fwdErr != nil {
		c.count(KindForward, raw, fwdErr)
		return failed
	}
	c.count(KindNoArchive, raw, errNoArchive)
	return refreshed
}
