package sampleweb

// page.go builds the day-independent skeleton of a page: its title, its
// paragraphs, its embedded objects and its links with their birth and death
// days. What a page looks like on a given day is the skeleton filtered by
// those days plus its children and its text revision (render.go).

// pageDoc is the skeleton of page n of host h.
type pageDoc struct {
	h, n, birth int
	section     int
	css         []string // stylesheet paths
	headJS      []string // scripts in <head>
	tailJS      []string // scripts at the end of <body>
	images      []string // image paths, logo first
	nav         []ref    // permanent links: root, tree children
	inline      []ref    // links inside paragraphs, some mortal
	iframe      *ref     // an embedded page, on some pages
	paras       []int    // words per paragraph
}

func (m *model) title(h, n int) string {
	r := rng(m.seed, tagTitle, uint64(h), uint64(n))
	return m.vocab.phrase(r, 2+r.IntN(4))
}

// page builds the skeleton of page n of host h; n may be any page number,
// born or not.
func (m *model) page(h, n int) *pageDoc {
	p := &pageDoc{h: h, n: n, birth: m.birth(h, n), section: n % len(sections)}
	sec := sections[p.section]
	p.css = []string{"/css/site.css", "/css/" + sec + ".css"}
	p.headJS = []string{"/js/app.js"}
	if n%2 == 0 {
		p.tailJS = []string{"/js/" + sec + ".js"}
	}

	ri := rng(m.seed, tagImage, uint64(h), uint64(n))
	p.images = []string{"/img/logo.png", imagePath(sectionImage(p.section))}
	for range 1 + ri.IntN(3) {
		p.images = append(p.images, imagePath(ri.IntN(imagePool)))
	}

	r := rng(m.seed, tagLinks, uint64(h), uint64(n))
	if n != 0 {
		p.nav = append(p.nav, ref{kind: refPage, h: h, n: 0, form: m.form(r), birth: p.birth, death: never})
	}
	if n < m.base[h] {
		for c := treeFanout*n + 1; c <= treeFanout*n+treeFanout && c < m.linkable(h); c++ {
			p.nav = append(p.nav, ref{kind: refPage, h: h, n: c, form: m.form(r), birth: 0, death: never})
		}
	}

	paras := 4 + r.IntN(57)
	p.paras = make([]int, paras)
	for i := range p.paras {
		p.paras[i] = 25 + r.IntN(70)
	}

	links := 6 + r.IntN(19)
	for i := range links {
		l := ref{form: m.form(r), birth: p.birth, death: never}
		x := r.Float64()
		switch {
		case m.plain || x < 0.80 || (x < 0.90 && m.hosts == 1):
			l.kind, l.h, l.n = refPage, h, m.intraTarget(h, n, r.IntN(1<<30))
			l.death = geometricDeath(p.birth, mix(m.seed, tagLinks, uint64(h), uint64(n), uint64(i)))
		case x < 0.90:
			l.kind = refPage
			l.h = (h + 1 + r.IntN(m.hosts-1)) % m.hosts
			l.n = r.IntN(m.linkable(l.h))
			l.form = 2
			l.death = geometricDeath(p.birth, mix(m.seed, tagLinks, uint64(h), uint64(n), uint64(i)))
		case x < 0.93:
			l.kind, l.h, l.k = refMissing, h, r.IntN(missingPaths)
		case x < 0.96:
			l.kind, l.h, l.k = refPrivate, h, r.IntN(privatePaths)
		case x < 0.975:
			l.kind, l.h = refMoved, h
		case x < 0.99:
			l.kind, l.h, l.k = refSearch, h, r.IntN(searchWords)
		default:
			l.kind, l.h, l.n, l.k = refSession, h, m.intraTarget(h, n, r.IntN(1<<30)), r.IntN(1000)
		}
		p.inline = append(p.inline, l)
	}

	if n != 0 && r.IntN(8) == 0 {
		p.iframe = &ref{kind: refPage, h: h, n: m.intraTarget(h, n, r.IntN(1<<30)), birth: p.birth, death: never}
	}
	return p
}

// form picks how a link is written; absolute URLs only outside plain mode,
// so a plain site's bytes do not depend on the port it is served on.
func (m *model) form(r interface{ IntN(int) int }) uint8 {
	if m.plain {
		return [...]uint8{0, 1, 3}[r.IntN(3)]
	}
	return uint8(r.IntN(4))
}

// intraTarget maps x to a page of host h that page n may link to: a base
// page other than the redirect target for base pages, any earlier page for
// pages born later.
func (m *model) intraTarget(h, n, x int) int {
	if n < m.base[h] {
		return x % m.linkable(h)
	}
	t := x % n
	if !m.plain && t == m.movedTarget(h) {
		t = 0
	}
	return t
}

// childRef is the link from a parent page to its child c, born later.
func (m *model) childRef(h, c int) ref {
	b := m.birth(h, c)
	return ref{kind: refPage, h: h, n: c, form: uint8(c % 2), birth: b,
		death: geometricDeath(b, mix(m.seed, tagParentDeath, uint64(h), uint64(c)))}
}

// pageState is a page as it is on one day.
type pageState struct {
	doc      *pageDoc
	inline   []ref // alive inline links
	children []ref // alive links to children
	rev      int   // text revision
	lastMod  int   // day the body last changed
}

// state returns page n of host h as it is on day d (d >= its birth).
func (m *model) state(h, n, d int) *pageState {
	doc := m.page(h, n)
	s := &pageState{doc: doc}
	s.rev, s.lastMod = m.textRevision(h, n, d)
	for _, l := range doc.inline {
		if l.aliveOn(d) {
			s.inline = append(s.inline, l)
		} else if l.death <= d {
			s.lastMod = max(s.lastMod, l.death)
		}
	}
	for _, c := range m.children(h, n, d) {
		l := m.childRef(h, c)
		s.lastMod = max(s.lastMod, l.birth)
		if l.aliveOn(d) {
			s.children = append(s.children, l)
		} else {
			s.lastMod = max(s.lastMod, l.death)
		}
	}
	return s
}

// refs returns every link and embedded object of the page on its day, in
// document order of kinds (the order does not matter to callers).
func (s *pageState) refs() []ref {
	d := s.doc
	out := make([]ref, 0, len(d.css)+len(d.headJS)+len(d.tailJS)+len(d.images)+len(d.nav)+len(s.inline)+len(s.children)+1)
	for _, list := range [][]string{d.css, d.headJS, d.tailJS, d.images} {
		for _, a := range list {
			out = append(out, ref{kind: refAsset, h: d.h, asset: a})
		}
	}
	out = append(out, d.nav...)
	out = append(out, s.inline...)
	out = append(out, s.children...)
	if d.iframe != nil {
		out = append(out, *d.iframe)
	}
	return out
}
