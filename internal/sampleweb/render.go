package sampleweb

import (
	"strconv"
	"strings"
)

// render.go turns the model into bytes: HTML pages and the small HTML
// resources around them (404, private, search pages). Bodies contain no
// clock: the same (seed, day, host addresses) give the same bytes.

// target returns the host and the path with query of what r points at.
func (m *model) target(r ref) (int, string) {
	switch r.kind {
	case refPage:
		return r.h, pagePath(r.n)
	case refMissing:
		return r.h, "/missing/" + strconv.Itoa(r.k) + ".html"
	case refPrivate:
		return r.h, "/private/" + strconv.Itoa(r.k) + ".html"
	case refMoved:
		return r.h, "/moved.html"
	case refSearch:
		return r.h, "/search?q=" + m.searchWord(r.k) + "&lang=en"
	case refSession:
		return r.h, pagePath(r.n) + "?session=" + strconv.FormatUint(mix(m.seed, uint64(r.k))&0xffffff, 16)
	default:
		return r.h, r.asset
	}
}

func (m *model) searchWord(k int) string { return m.vocab.words[100+k] }

// href writes how a page in directory dir on host h links to r.
func (m *model) href(h int, dir string, r ref, bases []string) string {
	th, p := m.target(r)
	if th != h {
		return bases[th] + p
	}
	switch r.form {
	case 1:
		return relative(dir, p)
	case 2:
		return bases[th] + p
	case 3:
		if !strings.Contains(p, "?") {
			return p + "#" + m.vocab.words[200+len(p)%50]
		}
	}
	return p
}

// relative writes root-relative path p relative to directory dir ("/" or
// "/<section>/").
func relative(dir, p string) string {
	if p == "/" {
		if dir == "/" {
			return "./"
		}
		return "../"
	}
	i := strings.LastIndexByte(strings.SplitN(p, "?", 2)[0], '/')
	if p[:i+1] == dir {
		return p[i+1:]
	}
	if dir == "/" {
		return p[1:]
	}
	return "../" + p[1:]
}

func pageDir(n int) string {
	if n == 0 {
		return "/"
	}
	return "/" + sections[n%len(sections)] + "/"
}

// escape escapes the characters of an attribute value or text.
var escape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace

// renderPage writes the HTML of page state s; bases are the hosts' base
// URLs ("http://127.0.0.2:8080").
func (m *model) renderPage(s *pageState, bases []string) []byte {
	d := s.doc
	dir := pageDir(d.n)
	a := func(b *strings.Builder, r ref, text string) {
		b.WriteString(`<a href="`)
		b.WriteString(escape(m.href(d.h, dir, r, bases)))
		b.WriteString(`">`)
		b.WriteString(text)
		b.WriteString(`</a>`)
	}
	var b strings.Builder
	b.Grow(512 + 600*len(d.paras))
	title := m.title(d.h, d.n)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
	b.WriteString(title)
	b.WriteString("</title>\n")
	for _, c := range d.css {
		b.WriteString(`<link rel="stylesheet" href="` + c + "\">\n")
	}
	for _, j := range d.headJS {
		b.WriteString(`<script src="` + j + "\"></script>\n")
	}
	b.WriteString("</head>\n<body>\n<header><img src=\"" + d.images[0] + "\" alt=\"logo\" width=\"32\" height=\"32\"> <h1>")
	b.WriteString(title)
	b.WriteString("</h1></header>\n<nav><ul>\n")
	for _, l := range d.nav {
		b.WriteString("<li>")
		a(&b, l, m.title(l.h, l.n))
		b.WriteString("</li>\n")
	}
	b.WriteString("</ul></nav>\n<main>\n<p class=\"news\">")
	m.vocab.paragraph(&b, rng(m.seed, tagNews, uint64(d.h), uint64(d.n), uint64(s.rev)), 20+s.rev%40)
	b.WriteString("</p>\n")
	for i, words := range d.paras {
		b.WriteString("<p>")
		m.vocab.paragraph(&b, rng(m.seed, tagText, uint64(d.h), uint64(d.n), uint64(i)), words)
		for j := i; j < len(s.inline); j += len(d.paras) {
			l := s.inline[j]
			b.WriteString(" See ")
			if l.kind == refPage || l.kind == refSession {
				a(&b, l, m.title(l.h, l.n))
			} else {
				a(&b, l, m.vocab.words[300+int(l.kind)*10+l.k])
			}
			b.WriteString(".")
		}
		b.WriteString("</p>\n")
		for k := 1; k < len(d.images); k++ {
			if (k-1)*len(d.paras)/(len(d.images)-1) == i {
				b.WriteString(`<figure><img src="` + d.images[k] + `" alt="figure ` + strconv.Itoa(k) + "\"></figure>\n")
			}
		}
	}
	if d.iframe != nil {
		b.WriteString("<iframe src=\"")
		b.WriteString(escape(m.href(d.h, dir, *d.iframe, bases)))
		b.WriteString("\" title=\"related\"></iframe>\n")
	}
	if len(s.children) > 0 {
		b.WriteString("<section class=\"new\"><h2>New pages</h2><ul>\n")
		for _, l := range s.children {
			b.WriteString("<li>")
			a(&b, l, m.title(l.h, l.n))
			b.WriteString("</li>\n")
		}
		b.WriteString("</ul></section>\n")
	}
	b.WriteString("</main>\n<footer><p>Sample web host " + strconv.Itoa(d.h) + ", page " + strconv.Itoa(d.n) + ".</p></footer>\n")
	for _, j := range d.tailJS {
		b.WriteString(`<script src="` + j + "\"></script>\n")
	}
	b.WriteString("</body>\n</html>\n")
	return []byte(b.String())
}

// renderSimple writes a small HTML page with a title, a paragraph and links.
func (m *model) renderSimple(h int, dir, title string, textSeed uint64, links []ref, bases []string) []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + title + "</title>\n")
	b.WriteString("<link rel=\"stylesheet\" href=\"/css/site.css\">\n</head>\n<body>\n<h1>" + title + "</h1>\n<p>")
	m.vocab.paragraph(&b, rng(m.seed, tagSearch, uint64(h), textSeed), 40)
	b.WriteString("</p>\n<ul>\n")
	for _, l := range links {
		b.WriteString(`<li><a href="` + escape(m.href(h, dir, l, bases)) + `">` + m.title(l.h, l.n) + "</a></li>\n")
	}
	b.WriteString("</ul>\n</body>\n</html>\n")
	return []byte(b.String())
}

// searchLinks are the pages a search result page links to.
func (m *model) searchLinks(h int, q string) []ref {
	x := mix(m.seed, tagSearch, uint64(h), uint64(len(q)))
	for _, c := range q {
		x = splitmix(x ^ uint64(c))
	}
	out := make([]ref, 5)
	for i := range out {
		out[i] = ref{kind: refPage, h: h, n: int((x >> (i * 8)) % uint64(m.linkable(h))), death: never}
	}
	return out
}

// privateLinks are the links of a page under the disallowed prefix.
func (m *model) privateLinks(h, k int) []ref {
	return []ref{
		{kind: refPage, h: h, n: 0, death: never},
		{kind: refPrivate, h: h, k: (k + 1) % privatePaths, death: never},
	}
}
