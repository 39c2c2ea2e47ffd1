package capture

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// usageProbe samples the CPU time and memory of the browser's process
// tree from /proc (Linux; elsewhere it finds nothing and reports 0).
type usageProbe struct {
	pid  int
	cpu  time.Duration
	peak int64
}

// clockTick is the unit of /proc/<pid>/stat times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// sample adds up the tree's CPU time and proportional set size now.
func (u *usageProbe) sample() {
	if u.pid == 0 {
		return
	}
	pids := tree(u.pid)
	var cpu time.Duration
	var mem int64
	for _, p := range pids {
		cpu += cpuOf(p)
		mem += pssOf(p)
	}
	u.cpu = max(u.cpu, cpu)
	u.peak = max(u.peak, mem)
}

// stat returns the fields of /proc/<pid>/stat after the command name.
func stat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// tree returns root and its descendants.
func tree(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := stat(pid)
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// cpuOf returns the user and system time of pid.
func cpuOf(pid int) time.Duration {
	f := stat(pid)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick
}

// pssOf returns the proportional set size of pid in bytes (its resident
// set size where smaps_rollup is not readable).
func pssOf(pid int) int64 {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	key := "Pss:"
	b, err := os.ReadFile(filepath.Join(dir, "smaps_rollup"))
	if err != nil {
		key = "VmRSS:"
		if b, err = os.ReadFile(filepath.Join(dir, "status")); err != nil {
			return 0
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
