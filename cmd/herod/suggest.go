package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// closest returns the candidate nearest to s by edit distance, if it is
// near enough to be a typo of it (at most a third of its letters wrong,
// at least one), else "".
func closest(s string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, len(s)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, with a swap of
// two adjacent letters counted as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// parse parses args, mapping flag errors to errUsage. A flag error is one
// line on the flag set's output that says what to do — the closest flag
// for an unknown one ("did you mean --quota?") and where the flags are
// listed — instead of the whole usage; -h prints the usage.
func parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	}
	fmt.Fprintf(out, "%s: %s\n", fs.Name(), flagErrorLine(fs, err))
	return errUsage
}

// flagErrorLine is the one line that reports err, a flag.Parse error of fs.
func flagErrorLine(fs *flag.FlagSet, err error) string {
	help := fmt.Sprintf("run `%s --help` for the flags", fs.Name())
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		msg := strings.Replace(err.Error(), " for flag -", " for --", 1)
		return fmt.Sprintf("%s; %s", msg, help)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if c := closest(name, names); c != "" {
		return fmt.Sprintf("unknown flag --%s: did you mean --%s?", name, c)
	}
	return fmt.Sprintf("unknown flag --%s; %s", name, help)
}
