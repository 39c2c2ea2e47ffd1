package node

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/herod-archive/herod/capture"
	"github.com/herod-archive/herod/crawl"
	"github.com/herod-archive/herod/internal/id"
	"github.com/herod-archive/herod/node/render"
	"github.com/herod-archive/herod/ring"
)

// BrowserConfig configures browser capture (issue 41, package
// node/render). Every node chooses pages to render and has a member with
// the role render them; Capture gives this node the role.
type BrowserConfig struct {
	// Capture volunteers the role: this node renders pages in headless
	// Chromium, its own and those members ask it for (herod run
	// --browser-capture). New fails when no browser answers.
	Capture bool
	// Path is the browser executable; "" looks for chromium on PATH
	// (render.FindBrowser).
	Path string
	// Concurrency bounds the browsers at once; default
	// render.DefaultConcurrency.
	Concurrency int
	// CPUShare is the part (0, 1] of the machine's CPUs the browsers may
	// use on average; default render.DefaultCPUShare.
	CPUShare float64
	// QueueWait bounds how long a render waits for a browser slot and
	// the CPU share; default render.DefaultQueueWait. Past it the page is
	// stored as fetched.
	QueueWait time.Duration
	// Rules is a file of SURT prefixes (or URLs), one a line, of pages
	// to render whatever their HTML (render.ParseRules); "" none.
	Rules string
	// Page holds the per-page settings of the role's renders (caps,
	// viewport, settle times; capture.Config). The node sets ExecPath,
	// AllowPrivate (the crawler's, added), TempDir (under DataDir when
	// empty), NoSandbox (when run as root) and Logger.
	Page capture.Config

	// capturer, set by tests, renders in place of Chromium.
	capturer render.Capturer
}

// renderCache keeps the members with the role for a second.
type renderCache struct {
	mu   sync.Mutex
	at   time.Time
	list []ring.Contact
}

// checkBrowser reads the rules file and finds the browser of a node
// with the role, or says why it cannot. Called from New.
func (n *Node) checkBrowser() error {
	if n.cfg.Browser.Rules != "" {
		if _, err := render.LoadRules(n.cfg.Browser.Rules); err != nil {
			return fmt.Errorf("node: --browser-rules: %w", err)
		}
	}
	if !n.cfg.Browser.Capture || n.cfg.Browser.capturer != nil {
		return nil
	}
	p, err := render.FindBrowser(n.cfg.Browser.Path)
	if err != nil {
		return fmt.Errorf("node: --browser-capture: %w", err)
	}
	n.cfg.Browser.Path = p
	return nil
}

// setupRender builds the browser-capture service and registers its
// protocols: delivery on every node, rendering on a node with the role.
// Called from buildCrawl, before the crawler that uses it.
func (n *Node) setupRender() error {
	bc := n.cfg.Browser
	var rules *render.Rules
	if bc.Rules != "" {
		var err error
		if rules, err = render.LoadRules(bc.Rules); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	verdicts, err := render.OpenVerdicts(filepath.Join(n.cfg.DataDir, "render-hosts"))
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	capt := bc.capturer
	if bc.Capture && capt == nil {
		pc := bc.Page
		pc.ExecPath = bc.Path
		pc.AllowPrivate = append(pc.AllowPrivate[:len(pc.AllowPrivate):len(pc.AllowPrivate)], n.cfg.Crawl.AllowPrivate...)
		if pc.TempDir == "" {
			pc.TempDir = filepath.Join(n.cfg.DataDir, "render-tmp")
		}
		if err := os.MkdirAll(pc.TempDir, 0o700); err != nil {
			return fmt.Errorf("node: render: %w", err)
		}
		pc.NoSandbox = pc.NoSandbox || os.Geteuid() == 0
		pc.Logger = n.log.With("sub", "capture")
		c, err := capture.New(pc)
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		capt = c
	}
	n.render, err = render.New(render.Config{
		Self:        n.self.Peer,
		Capturer:    capt,
		Concurrency: bc.Concurrency,
		CPUShare:    bc.CPUShare,
		QueueWait:   bc.QueueWait,
		MaxBody:     cmp.Or(n.cfg.Crawl.MaxBody, crawl.DefaultMaxBody),
		Chooser:     &render.Chooser{Rules: rules, Verdicts: verdicts},
		Store:       n.store,
		Owner:       func(ctx context.Context, k id.ID) (ring.Node, error) { return n.ring.Lookup(ctx, k) },
		Owns:        n.ownsURL,
		Renderers:   n.renderers,
		HasRole:     n.hasRenderRole,
		Open:        n.openStream,
		Logger:      n.log.With("sub", "render"),
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.kit.MustHandle(n.render.DeliverSpec())
	if bc.Capture {
		n.kit.MustHandle(n.render.RenderSpec())
	}
	return nil
}

// renderers lists the members with the role that this node's routing
// state names (successors, predecessors, fingers of its virtual
// servers): those whose identify exchange lists render.RenderProtocol.
func (n *Node) renderers() []ring.Contact {
	// Every changed page the crawler stores asks: the answer is kept
	// for a second.
	c := &n.renderCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < time.Second {
		return slices.Clone(c.list)
	}
	c.list, c.at = n.findRenderers(), time.Now()
	return slices.Clone(c.list)
}

// findRenderers is renderers without the cache.
func (n *Node) findRenderers() []ring.Contact {
	seen := map[string]bool{n.self.Peer: true}
	var out []ring.Contact
	add := func(c ring.Contact) {
		if seen[c.Peer] {
			return
		}
		seen[c.Peer] = true
		if n.hasRenderRole(c.Peer) {
			out = append(out, c)
		}
	}
	for _, v := range n.ring.Status().Vnodes {
		if v.Predecessor != nil {
			add(v.Predecessor.Contact)
		}
		for _, s := range v.Successors {
			add(s.Contact)
		}
		for _, f := range v.Fingers {
			add(f.Node.Contact)
		}
	}
	return out
}

// hasRenderRole reports whether peer serves the render protocol, as its
// identify exchange with this node said.
func (n *Node) hasRenderRole(p string) bool {
	pid, err := peer.Decode(p)
	if err != nil {
		return false
	}
	ps, err := n.host.Peerstore().SupportsProtocols(pid, render.RenderProtocol)
	return err == nil && len(ps) > 0
}

// RenderStats returns the browser-capture service's counters.
func (n *Node) RenderStats() render.Stats { return n.render.Stats() }
