package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// cpuProfileEnv names a directory where `herod run` writes a CPU profile
// of its whole run, herod-<pid>.cpu.prof, written when the node leaves
// (SIGTERM or Ctrl-C). The benchmarks that time several herod
// processes use it (scripts/bench-ring-realistic.sh CPUPROF=DIR).
const cpuProfileEnv = "HEROD_CPUPROFILE"

// startCPUProfile starts the profile cpuProfileEnv asks for and returns
// the function that writes it; with the variable unset it does nothing.
func startCPUProfile(stderr io.Writer) func() {
	dir := os.Getenv(cpuProfileEnv)
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "herod run: %s: %v; no profile\n", cpuProfileEnv, err)
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("herod-%d.cpu.prof", os.Getpid())))
	if err != nil {
		fmt.Fprintf(stderr, "herod run: %s: %v; no profile\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(stderr, "herod run: %s: %v; no profile\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "herod run: %s: %v\n", cpuProfileEnv, err)
		}
	}
}
