package render

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// Browsers are the executables FindBrowser looks for on PATH, in order.
var Browsers = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// ErrNoBrowser is FindBrowser's error when no browser answers.
var ErrNoBrowser = errors.New("render: no Chromium found: install Debian's chromium package, or give the browser's path with --browser-path")

// FindBrowser returns the browser to render with: path when given, or
// the first of Browsers on PATH, once it has answered --version (within
// 20 s; a browser that cannot start is no browser).
func FindBrowser(path string) (string, error) {
	try := Browsers
	if path != "" {
		try = []string{path}
	}
	var errs []error
	for _, name := range try {
		p, err := exec.LookPath(name)
		if err != nil {
			if path != "" {
				errs = append(errs, err)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = exec.CommandContext(ctx, p, "--version").Run()
		cancel()
		if err == nil {
			return p, nil
		}
		errs = append(errs, fmt.Errorf("%s --version: %w", p, err))
	}
	return "", errors.Join(append([]error{ErrNoBrowser}, errs...)...)
}
