package warciotest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Summary is what validate.mjs reports of a WARC file.
type Summary struct {
	Records, Responses, Revisits int
	Requests                     int      // request records, each followed by its response
	URIs                         []string `json:"uris"`
	Errors                       []string
}

// Tool runs warcio.js.
type Tool struct {
	node   string // the node binary
	script string // scripts/archive
}

// Setup returns a Tool, or skips t (see the package comment). A failed
// npm ci fails t.
func Setup(t testing.TB) *Tool {
	t.Helper()
	if os.Getenv("HEROD_SKIP_NODE") != "" {
		t.Skip("HEROD_SKIP_NODE set")
	}
	node, err1 := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err1 != nil || err2 != nil {
		t.Skip("node/npm not installed: cannot validate WARC files with warcio.js")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "scripts", "archive")
	// Test binaries of several packages may get here at once on a fresh
	// checkout: one installs, the others wait for it.
	lock, err := os.OpenFile(filepath.Join(script, ".npm-install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("warciotest: %v", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("warciotest: lock %s: %v", lock.Name(), err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if _, err := os.Stat(filepath.Join(script, "node_modules", "warcio", "package.json")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = script
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s (needs the npm registry once): %v\n%s", script, err, out)
		}
	}
	return &Tool{node: node, script: script}
}

// moduleRoot returns the directory of the go.mod above the working
// directory (a test's package directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("warciotest: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("warciotest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// stderrOf returns what a failed command wrote to its standard error.
func stderrOf(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}

// Validate reads the WARC file at path with warcio.js and returns what it
// found; a file warcio cannot read fails t.
func (w *Tool) Validate(t testing.TB, path string) Summary {
	t.Helper()
	out, err := exec.Command(w.node, filepath.Join(w.script, "validate.mjs"), path).Output()
	if err != nil {
		t.Fatalf("warcio validation of %s failed: %v\n%s%s", path, err, out, stderrOf(err))
	}
	var sum Summary
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("validator output %q: %v", out, err)
	}
	return sum
}

// CDXIndex returns the CDXJ index warcio's cdx-index writes for the WARC
// file name in dir.
func (w *Tool) CDXIndex(t testing.TB, dir, name string) []byte {
	t.Helper()
	cmd := exec.Command(w.node, filepath.Join(w.script, "node_modules", "warcio", "dist", "cli.js"), "cdx-index", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("warcio cdx-index %s: %v\n%s", name, err, stderrOf(err))
	}
	return out
}
