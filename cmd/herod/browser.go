package main

import (
	"flag"
	"os"

	"github.com/herod-archive/herod/node"
	"github.com/herod-archive/herod/node/render"
)

// browserFlags are herod run's browser-capture settings (node.BrowserConfig).
type browserFlags struct {
	capture     bool
	path, rules string
	concurrency int
	cpu         float64
}

func (b *browserFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&b.capture, "browser-capture", false, "volunteer the browser-capture role: render script-built pages in headless Chromium, this node's and those other members hand over (needs chromium)")
	fs.StringVar(&b.path, "browser-path", "", "Chromium or Chrome executable for --browser-capture (default: chromium, chromium-browser or google-chrome on PATH)")
	fs.IntVar(&b.concurrency, "browser-concurrency", render.DefaultConcurrency, "pages rendered at once with --browser-capture (each browser holds about 1/3 GiB while it runs)")
	fs.Float64Var(&b.cpu, "browser-cpu", render.DefaultCPUShare, "part of this machine's CPUs the browsers may use on average with --browser-capture, more than 0 and at most 1")
	fs.StringVar(&b.rules, "browser-rules", "", "file of SURT prefixes (com,example)/app/) or URLs, one a line, whose pages are rendered in a browser whatever their HTML")
}

// validate reports the refused browser settings through bad.
func (b *browserFlags) validate(bad func(name, why string) error) []error {
	var errs []error
	if b.concurrency < 1 {
		errs = append(errs, bad("browser-concurrency", "want 1 or more"))
	}
	if !(b.cpu > 0 && b.cpu <= 1) {
		errs = append(errs, bad("browser-cpu", "want more than 0, at most 1"))
	}
	if b.rules != "" {
		if _, err := render.LoadRules(b.rules); err != nil {
			errs = append(errs, bad("browser-rules", err.Error()))
		}
	}
	if b.path != "" && b.capture {
		if _, err := os.Stat(b.path); err != nil {
			errs = append(errs, bad("browser-path", err.Error()))
		}
	}
	return errs
}

// config returns the node's browser settings.
func (b *browserFlags) config() node.BrowserConfig {
	return node.BrowserConfig{Capture: b.capture, Path: b.path, Concurrency: b.concurrency, CPUShare: b.cpu, Rules: b.rules}
}
