package main

import (
	"errors"
	"flag"
	"math"
	"strconv"
	"strings"
	"time"
)

// byteUnits are the suffixes a byte count or rate takes: decimal k, M, G,
// T (2M is 2,000,000) and binary Ki, Mi, Gi, Ti (2Mi is 2,097,152), each
// optionally followed by B; longest first, so that "Mi" is not read as "M".
var byteUnits = []struct {
	suffix string
	n      float64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"KI", 1 << 10}, {"MI", 1 << 20}, {"GI", 1 << 30}, {"TI", 1 << 40},
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
}

// parseBytes reads a non-negative number of bytes with an optional unit
// suffix (byteUnits), "50G" or "1.5Mi" or "2MB".
func parseBytes(s string) (int64, bool) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "b")
	mult := 1.0
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = rest, u.n
			break
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > math.MaxInt64/2 {
		return 0, false
	}
	return int64(math.Round(f * mult)), true
}

// formatBytes writes n with the largest unit that divides it exactly,
// decimal before binary: 2000000 is "2M", 10485760 is "10Mi".
func formatBytes(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"k", 1e3}, {"Ki", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
}

// byteSize is a flag of bytes with an optional unit suffix: 50G is
// 50,000,000,000 bytes, 10Mi is 10,485,760 (byteUnits).
type byteSize int64

func (b *byteSize) String() string { return formatBytes(int64(*b)) }

func (b *byteSize) Set(s string) error {
	n, ok := parseBytes(s)
	if !ok {
		return errors.New("want bytes, like 500M, 50G or 10Mi")
	}
	*b = byteSize(n)
	return nil
}

// Get returns the value as String writes it, so that herod config
// prints "50G" rather than 50000000000.
func (b *byteSize) Get() any { return b.String() }

// byteRate is a flag of bytes per second with an optional unit suffix
// (byteUnits: 2M is 2,000,000); 0 means no cap.
type byteRate int64

func (b *byteRate) String() string { return formatBytes(int64(*b)) }

func (b *byteRate) Set(s string) error {
	n, ok := parseBytes(s)
	if !ok {
		return errors.New("want bytes per second, like 500k or 2M")
	}
	*b = byteRate(n)
	return nil
}

// Get returns the value as String writes it, so that herod config
// prints "2M" rather than 2000000.
func (b *byteRate) Get() any { return b.String() }

// duration is a flag of a Go duration ("90s", "1h30m") that also takes
// days, "1d" or "1.5d" (24 hours each), alone or before the rest: "1d12h".
type duration time.Duration

func (d *duration) String() string { return time.Duration(*d).String() }

func (d *duration) Set(s string) error {
	t := strings.TrimSpace(s)
	if t == "" {
		return errBadDuration
	}
	var days float64
	if i := strings.IndexByte(t, 'd'); i > 0 {
		f, err := strconv.ParseFloat(t[:i], 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > 100*365 {
			return errBadDuration
		}
		days, t = f, t[i+1:]
	}
	var rest time.Duration
	if t != "" {
		var err error
		if rest, err = time.ParseDuration(t); err != nil {
			return errBadDuration
		}
	}
	*d = duration(time.Duration(days*float64(24*time.Hour)) + rest)
	return nil
}

// Get returns the time.Duration, which herod config prints quoted.
func (d *duration) Get() any { return time.Duration(*d) }

var errBadDuration = errors.New("want a duration, like 90s, 10m, 24h or 1d")

// durationVar registers a duration flag (days accepted) on p.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*duration)(p), name, usage)
}
