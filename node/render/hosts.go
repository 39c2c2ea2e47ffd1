package render

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
)

// MaxHosts bounds the hosts whose verdict a node remembers; past it the
// oldest verdicts are forgotten (their hosts are probed again).
const MaxHosts = 100_000

// Verdicts remember, per web host, whether its pages need a browser, as
// rendering the first page of it this node captured found (Learn). They
// are kept in a file, one "host 0|1" line a verdict, appended as they
// are learned and rewritten at open when it holds many stale lines.
// Safe for concurrent use.
type Verdicts struct {
	path string

	mu      sync.Mutex
	need    map[string]bool
	order   []string // hosts in the order learned, for eviction
	probing map[string]bool
}

// OpenVerdicts loads the verdicts kept at path ("" keeps them in memory
// only).
func OpenVerdicts(path string) (*Verdicts, error) {
	v := &Verdicts{path: path, need: map[string]bool{}, probing: map[string]bool{}}
	if path == "" {
		return v, nil
	}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return v, nil
	}
	if err != nil {
		return nil, fmt.Errorf("render verdicts: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
		host, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || host == "" || (val != "0" && val != "1") {
			continue // a line cut by a crash
		}
		v.setLocked(host, val == "1")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("render verdicts: %w", err)
	}
	if lines > 2*len(v.need)+1000 {
		if err := v.rewriteLocked(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// setLocked records a verdict in memory, forgetting the oldest past
// MaxHosts.
func (v *Verdicts) setLocked(host string, need bool) {
	if _, ok := v.need[host]; !ok {
		v.order = append(v.order, host)
	}
	v.need[host] = need
	for len(v.order) > MaxHosts {
		delete(v.need, v.order[0])
		v.order = v.order[1:]
	}
}

func (v *Verdicts) rewriteLocked() error {
	tmp := v.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("render verdicts: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, h := range v.order {
		fmt.Fprintf(w, "%s %s\n", h, bit(v.need[h]))
	}
	err = w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, v.path)
	}
	if err != nil {
		return fmt.Errorf("render verdicts: %w", err)
	}
	return nil
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Need returns the verdict on host and whether there is one.
func (v *Verdicts) Need(host string) (need, known bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	need, known = v.need[host]
	return need, known
}

// Probe reports whether a page of host should be rendered to learn the
// host's verdict: none is known and no probe is under way. A true
// return starts the probe; Learn or Abandon ends it.
func (v *Verdicts) Probe(host string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.need[host]; ok || v.probing[host] {
		return false
	}
	v.probing[host] = true
	return true
}

// Abandon ends a probe of host that learned nothing (the page could not
// be rendered): the next page of the host probes again.
func (v *Verdicts) Abandon(host string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.probing, host)
}

// Learn records the verdict on host and ends its probe.
func (v *Verdicts) Learn(host string, need bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.probing, host)
	v.setLocked(host, need)
	if v.path == "" {
		return nil
	}
	f, err := os.OpenFile(v.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("render verdicts: %w", err)
	}
	_, err = fmt.Fprintf(f, "%s %s\n", host, bit(need))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("render verdicts: %w", err)
	}
	return nil
}

// Len returns the number of hosts with a verdict.
func (v *Verdicts) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.need)
}
