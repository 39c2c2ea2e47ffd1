package warciotest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Summary is what validate.mjs reports of a WARC file.
type Summary struct {
	Records, Responses, Revisits int
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
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("warciotest: cannot find its own source file")
	}
	script := filepath.Join(filepath.Dir(here), "..", "..", "scripts", "archive")
	if _, err := os.Stat(filepath.Join(script, "node_modules", "warcio", "package.json")); err != nil {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = script
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s (needs the npm registry once): %v\n%s", script, err, out)
		}
	}
	return &Tool{node: node, script: script}
}

// Validate reads the WARC file at path with warcio.js and returns what it
// found; a file warcio cannot read fails t.
func (w *Tool) Validate(t testing.TB, path string) Summary {
	t.Helper()
	out, err := exec.Command(w.node, filepath.Join(w.script, "validate.mjs"), path).Output()
	if err != nil {
		t.Fatalf("warcio validation of %s failed: %v\n%s", path, err, out)
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
		t.Fatalf("warcio cdx-index %s: %v", name, err)
	}
	return out
}
