package sampleweb

import (
	"math"
	"strconv"
	"strings"
	"sync"
)

// The model is the sample web as a pure function of (seed, day). Hosts are
// numbered 0..hosts-1 and pages of a host 0..; page 0 is the host's root.
// Pages 0..base[h]-1 exist from day 0; perDay new pages are born on every
// later day, numbered after them. A page, once born, is served for ever.
//
// A page's body depends only on its text revision (how many text changes it
// has had) and on which of its links are alive, so it changes exactly on the
// days when one of those events happens: a text change, the death of one of
// its links, or the birth of a child page it links to, or the death of that
// link. lastMod is the latest such day.

var sections = []string{"news", "docs", "blog", "wiki", "shop", "about"}

const (
	never        = math.MaxInt
	textChange   = 30    // per mille of pages whose text changes each day
	linkDeath    = 0.004 // daily probability that a mortal link disappears
	treeFanout   = 4     // every base page is linked from page (n-1)/treeFanout
	imagePool    = 30    // images per host besides the logo
	missingPaths = 4     // distinct 404 paths per host
	privatePaths = 6     // distinct pages under the robots-disallowed prefix
	searchWords  = 10    // distinct dynamic search URLs per host
)

// refKind says what a link points at.
type refKind uint8

const (
	refPage    refKind = iota // an HTML page (h, n)
	refMissing                // /missing/<k>.html: 404
	refPrivate                // /private/<k>.html: disallowed by robots.txt
	refMoved                  // /moved.html: 301 to page base[h]-1
	refSearch                 // /search?q=<word k>: dynamic
	refSession                // page (h, n) with ?session=<k>: dynamic
	refAsset                  // an image, stylesheet or script at path
)

// ref is one link in a page: where it points, how it is written, and the
// day it disappears from the page (never for permanent links).
type ref struct {
	kind  refKind
	h, n  int
	k     int
	asset string
	form  uint8 // 0 root-relative, 1 relative, 2 absolute, 3 root-relative with fragment
	birth int   // day the link appears (the page's birth, or a child's)
	death int
}

func (r ref) aliveOn(d int) bool { return r.birth <= d && d < r.death }

// model holds the parameters; derived data is computed on demand.
type model struct {
	seed   int64
	hosts  int
	base   []int // pages per host on day 0
	perDay int   // pages born per host each day after day 0
	plain  bool  // static-site mode: intra-host page links only, no traps
	// Set once after newModel, before use:
	crawlDelay   int // seconds of Crawl-delay in robots.txt; 0 for none
	robotsStatus int // status robots.txt answers when 400-599; else 200
	vocab        *vocabulary

	assets sync.Map // assetKey -> resource
	bodies bodyCache

	mu       sync.Mutex
	kids     []map[int][]int // per host: parent page -> children, ascending
	kidsUpTo int             // kids covers pages born on days <= kidsUpTo
}

func newModel(seed int64, hosts, pages, perDay int, plain bool) *model {
	m := &model{seed: seed, hosts: hosts, perDay: perDay, plain: plain, vocab: newVocabulary(seed)}
	m.base = make([]int, hosts)
	m.kids = make([]map[int][]int, hosts)
	for h := range hosts {
		m.base[h] = pages / hosts
		if h < pages%hosts {
			m.base[h]++
		}
		m.kids[h] = make(map[int][]int)
	}
	return m
}

// robotsFailing reports whether robots.txt answers an error status.
func (m *model) robotsFailing() bool { return m.robotsStatus >= 400 && m.robotsStatus <= 599 }

// pageCount is how many pages host h has on day d.
func (m *model) pageCount(h, d int) int { return m.base[h] + m.perDay*d }

// birth is the day page n of host h appears.
func (m *model) birth(h, n int) int {
	if n < m.base[h] {
		return 0
	}
	return 1 + (n-m.base[h])/m.perDay
}

// movedTarget is the page /moved.html redirects to; no link points at it
// directly, so it is reachable only by following the redirect.
func (m *model) movedTarget(h int) int { return m.base[h] - 1 }

// linkable is the number of base pages that ordinary links may target.
func (m *model) linkable(h int) int {
	if m.plain {
		return m.base[h]
	}
	return m.base[h] - 1
}

func pagePath(n int) string {
	if n == 0 {
		return "/"
	}
	return "/" + sections[n%len(sections)] + "/" + strconv.Itoa(n) + ".html"
}

// parsePagePath is the inverse of pagePath.
func parsePagePath(p string) (int, bool) {
	if p == "/" {
		return 0, true
	}
	if !strings.HasPrefix(p, "/") {
		return 0, false
	}
	sec, file, ok := strings.Cut(p[1:], "/")
	if !ok || !strings.HasSuffix(file, ".html") {
		return 0, false
	}
	num := strings.TrimSuffix(file, ".html")
	if num == "" || num[0] == '0' || len(num) > 9 || strings.Trim(num, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || sections[n%len(sections)] != sec {
		return 0, false
	}
	return n, true
}

func imagePath(k int) string {
	return "/img/" + strconv.Itoa(k) + [...]string{".png", ".gif", ".svg"}[k%3]
}

// sectionImage is the pool image a section's stylesheet uses as background.
func sectionImage(sec int) int { return sec }

// geometricDeath is the day after birth on which a mortal link disappears.
func geometricDeath(birth int, h uint64) int {
	days := math.Floor(math.Log(unit(h)) / math.Log1p(-linkDeath))
	if days > 1e6 {
		return never
	}
	return birth + 1 + int(days)
}

// parent is the page that links to new page c when it is born.
func (m *model) parent(h, c int) int {
	return int(mix(m.seed, tagParent, uint64(h), uint64(c)) % uint64(c))
}

// children returns the pages born after day 0 whose parent is page n of
// host h and that exist on day d, ascending (so by birth).
func (m *model) children(h, n, d int) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ; m.kidsUpTo < d; m.kidsUpTo++ {
		day := m.kidsUpTo + 1
		for hh := range m.hosts {
			for j := range m.perDay {
				c := m.base[hh] + (day-1)*m.perDay + j
				p := m.parent(hh, c)
				m.kids[hh][p] = append(m.kids[hh][p], c)
			}
		}
	}
	all := m.kids[h][n]
	i := 0
	for i < len(all) && m.birth(h, all[i]) <= d {
		i++
	}
	return all[:i]
}

// textRevision counts the text changes of page n of host h up to day d and
// returns it with the day of the latest one (its birth if none).
func (m *model) textRevision(h, n, d int) (rev, last int) {
	b := m.birth(h, n)
	last = b
	for e := b + 1; e <= d; e++ {
		if mix(m.seed, tagChange, uint64(h), uint64(n), uint64(e))%1000 < textChange {
			rev++
			last = e
		}
	}
	return rev, last
}
