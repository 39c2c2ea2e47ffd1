package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfile: with HEROD_CPUPROFILE set, the function startCPUProfile
// returns writes a profile named after the process into that directory;
// unset, nothing is written; a directory that cannot be made is reported
// and the run goes on without a profile.
func TestCPUProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles")
	t.Setenv(cpuProfileEnv, dir)
	var stderr bytes.Buffer
	startCPUProfile(&stderr)()
	files, _ := filepath.Glob(filepath.Join(dir, "herod-*.cpu.prof"))
	if len(files) != 1 || stderr.Len() != 0 {
		t.Fatalf("profiles %v, stderr %q; want one", files, stderr.String())
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v, %v", files[0], fi, err)
	}

	t.Setenv(cpuProfileEnv, "")
	startCPUProfile(&stderr)()
	if stderr.Len() != 0 {
		t.Fatalf("unset: %q", stderr.String())
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cpuProfileEnv, filepath.Join(file, "sub"))
	startCPUProfile(&stderr)()
	if !strings.Contains(stderr.String(), "no profile") {
		t.Fatalf("a directory under a file: stderr %q", stderr.String())
	}
}
