package crawl

import (
	"net/url"
	"slices"
	"strings"

	"github.com/herod-archive/herod/internal/canon"
	"github.com/herod-archive/herod/internal/webrefs"
)

// MaxLinks caps the links ExtractLinks returns for one document; the rest
// are ignored. It bounds memory on hostile pages.
const MaxLinks = 10000

// ExtractLinks returns the canonical absolute http(s) links of a document
// fetched from base, deduplicated and sorted: the references
// internal/webrefs finds that a browser loads or a reader follows (not
// those of Use Unfetched, such as a form's action). HTML (text/html,
// application/xhtml+xml) yields what webrefs.HTML finds (the attribute
// table's links and requisites, style attributes and <style> elements,
// a meta refresh, inline scripts); its <base href> moves the resolution
// base. Script files (text/javascript and the like) yield what
// webrefs.JSRefs finds: static imports and re-exports, string specifiers
// of import(), new URL(…, import.meta.url) and workers, and string
// literals naming a resource of the script's own host by its path. CSS
// (text/css) yields its url(), @import and image-set() targets. Other types yield
// nothing. Links that do not resolve to a valid http(s) URL are skipped.
// At most MaxLinks links are returned. ExtractLinks never panics, whatever
// the input.
func ExtractLinks(base *url.URL, contentType string, body []byte) []string {
	links, reqs := ExtractRequisites(base, contentType, body)
	out := append(links, reqs...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ExtractRequisites is ExtractLinks split in two: links, the references
// a reader follows (a and area href, <link> of other rels, a meta
// refresh), and reqs, the page requisites the document loads to display
// itself (webrefs.Embed). A URL both followed and embedded is a requisite only.
// Each list is deduplicated and sorted; together they hold at most
// MaxLinks URLs.
func ExtractRequisites(base *url.URL, contentType string, body []byte) (links, reqs []string) {
	return extractLinks(base, contentType, body, nil, nil)
}

// RequisitesOfRefs is ExtractRequisites of an HTML document fetched
// from base whose references a caller found itself, walking the
// document for more (webrefs.HTML's results, or a webrefs.TokenRefs'):
// refs, and the href of its first <base> if hasBase.
func RequisitesOfRefs(base *url.URL, refs []webrefs.Ref, href string, hasBase bool) (links, reqs []string) {
	if base == nil {
		return nil, nil
	}
	if hasBase {
		base = resolveBase(base, href)
	}
	return splitRefs(base, refs, nil, nil)
}

// extractLinks is ExtractRequisites keeping only the links keep and the
// requisites keepReq admit (nil: every one). Each gets the URL both parsed
// and in canonical form and returns the form to keep.
func extractLinks(base *url.URL, contentType string, body []byte, keep, keepReq func(*url.URL, string) (string, bool)) (links, reqs []string) {
	if base == nil {
		return nil, nil
	}
	mt := mediaType(contentType)
	var refs []webrefs.Ref
	switch {
	case isHTML(mt):
		var href string
		var ok bool
		if refs, href, ok = webrefs.HTML(body, base.Host); ok {
			base = resolveBase(base, href)
		}
	case isCSS(mt):
		refs = webrefs.CSSRefs(body, nil)
	case isJS(mt):
		refs = webrefs.JSRefs(body, base.Host, false, nil)
	default:
		return nil, nil
	}
	return splitRefs(base, refs, keep, keepReq)
}

// resolveRefs resolves raw references against base and returns the
// canonical http(s) ones that keep admits (all when nil), deduplicated and
// sorted, at most MaxLinks, embedded or not.
func resolveRefs(base *url.URL, refs []webrefs.Ref, keep func(*url.URL, string) (string, bool)) []string {
	links, reqs := splitRefs(base, refs, keep, keep)
	out := append(links, reqs...)
	slices.Sort(out)
	return out
}

// splitRefs resolves raw references against base and returns the
// canonical http(s) links that keep admits and requisites that keepReq
// admits (all when nil), each deduplicated and sorted, at most MaxLinks
// in all. A URL that is a requisite is not also a link.
func splitRefs(base *url.URL, refs []webrefs.Ref, keep, keepReq func(*url.URL, string) (string, bool)) (links, reqs []string) {
	kind := make(map[string]bool, len(refs)) // canonical URL → embedded
	// Requisites first, so that a URL both embedded and followed counts
	// as a requisite and the per-page caps of keepReq see them all.
	for _, embed := range []bool{true, false} {
		k := keep
		if embed {
			k = keepReq
		}
		for _, r := range refs {
			if r.Use == webrefs.Unfetched || (r.Use == webrefs.Embed) != embed {
				continue
			}
			if len(kind) >= MaxLinks {
				break
			}
			s := strings.TrimSpace(r.URL)
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			u, c, err := canon.ResolveURL(base, s)
			if err != nil {
				continue
			}
			if _, dup := kind[c]; dup {
				continue
			}
			if k != nil {
				var ok bool
				if c, ok = k(u, c); !ok {
					continue
				}
				if _, dup := kind[c]; dup {
					continue
				}
			}
			kind[c] = embed
			if embed {
				reqs = append(reqs, c)
			} else {
				links = append(links, c)
			}
		}
	}
	slices.Sort(links)
	slices.Sort(reqs)
	return links, reqs
}

// resolveBase returns the base URL a <base href> value sets in a document
// fetched from doc: doc itself when the value does not resolve.
func resolveBase(doc *url.URL, href string) *url.URL {
	b, err := canon.Resolve(doc, href)
	if err != nil {
		return doc
	}
	bu, err := url.Parse(b)
	if err != nil {
		return doc
	}
	return bu
}
