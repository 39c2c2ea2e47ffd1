package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// Browser is a headless Chromium or Chrome.
type Browser struct {
	path string
}

// Find returns the first of chromium, chromium-browser, google-chrome and
// google-chrome-stable that answers --version, or skips t.
func Find(t testing.TB) *Browser {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = exec.CommandContext(ctx, p, "--version").Run()
		cancel()
		if err == nil {
			return &Browser{path: p}
		}
	}
	if os.Getenv("HEROD_REQUIRE_BROWSER") != "" {
		t.Fatal("HEROD_REQUIRE_BROWSER is set and no working headless Chromium or Chrome is installed")
	}
	t.Skip("no working headless Chromium or Chrome installed")
	return nil
}

// Path returns the browser's executable, for tests that drive it
// themselves (over the DevTools protocol, say).
func (b *Browser) Path() string { return b.path }

// console matches Chromium's log entries for console messages, uncaught
// exceptions and CSP refusals, `[pid:tid:date:INFO:CONSOLE:line] "message",
// source: url (line)`, messages of several lines included.
var console = regexp.MustCompile(`(?s):CONSOLE[^\]]*\] "(.*?)", source: `)

// Load opens url with a fresh profile, lets its scripts run for up to 10 s
// of virtual time, and returns the serialized DOM and the console
// messages (errors, CSP refusals and logs alike). A browser that fails
// fails t.
func (b *Browser) Load(t testing.TB, url string) (dom string, messages []string) {
	t.Helper()
	return b.LoadWithin(t, url, 10*time.Second)
}

// LoadWithin is Load with a budget of virtual time instead of 10 s. Virtual
// time goes on while a page waits on some steps (a service worker's
// registration among them: TestAttackPages' scripts ran out of 10 s on a
// loaded machine), so a page whose scripts take such steps in turn needs
// more of it under load; time with nothing to run is skipped at once.
func (b *Browser) LoadWithin(t testing.TB, url string, budget time.Duration) (dom string, messages []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second+budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.path, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-dev-shm-usage", "--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0",
		fmt.Sprintf("--virtual-time-budget=%d", budget.Milliseconds()), "--dump-dom", url)
	// Chromium's helper processes inherit the pipes; do not wait for them
	// past the browser itself.
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", b.path, url, err, stderr.Bytes())
	}
	for _, m := range console.FindAllSubmatch(stderr.Bytes(), -1) {
		messages = append(messages, string(m[1]))
	}
	return string(out), messages
}
