package render

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/herod-archive/herod/archive/access"
)

// Rules are the SURT prefixes of the pages to render whatever their
// HTML: an operator's data (Config.RuleFile, herod run --browser-rules)
// for sites known to need a browser.
type Rules struct {
	prefixes []string // sorted, lower case
}

// ParseRules reads rules, one a line: a SURT prefix
// ("com,example)/app/") or a URL whose SURT key is the prefix
// ("https://example.com/app/"). Blank lines and lines starting with #
// are skipped. A line that is neither is an error naming it; nothing is
// returned then.
func ParseRules(b []byte) (*Rules, error) {
	r := &Rules{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, err := rulePrefix(line)
		if err != nil {
			return nil, fmt.Errorf("render rules: line %d: %w", n, err)
		}
		r.prefixes = append(r.prefixes, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("render rules: %w", err)
	}
	slices.Sort(r.prefixes)
	r.prefixes = slices.Compact(r.prefixes)
	return r, nil
}

// LoadRules reads the rules file at path (ParseRules).
func LoadRules(path string) (*Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("render rules: %w", err)
	}
	r, err := ParseRules(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// rulePrefix returns the SURT prefix a rule line names.
func rulePrefix(line string) (string, error) {
	if strings.Contains(line, "://") {
		k, err := access.SURT(line)
		if err != nil {
			return "", err
		}
		return k, nil
	}
	if strings.ContainsAny(line, " \t") || !strings.ContainsAny(line, ",)") {
		return "", fmt.Errorf("%q is neither a SURT prefix (com,example)/path) nor an http(s) URL", line)
	}
	return strings.ToLower(line), nil
}

// Len returns the number of prefixes.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.prefixes)
}

// Match reports whether url's SURT key starts with one of the prefixes.
func (r *Rules) Match(url string) bool {
	if r.Len() == 0 {
		return false
	}
	k, err := access.SURT(url)
	if err != nil {
		return false
	}
	// The prefixes at most k sort before k's successor: the longest
	// candidate is the last one at or before k.
	i, found := slices.BinarySearch(r.prefixes, k)
	if found {
		return true
	}
	for j := i - 1; j >= 0; j-- {
		p := r.prefixes[j]
		if strings.HasPrefix(k, p) {
			return true
		}
		if p == "" || p[0] != k[0] {
			break
		}
	}
	return false
}
