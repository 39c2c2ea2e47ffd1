package main

import (
	"strings"
	"testing"
)

// TestSimCommand runs herod sim at small scale (about 5 s) and checks its
// report's tables; a bad scale is refused.
func TestSimCommand(t *testing.T) {
	if _, err := run(t, simCmd, "--scale", "huge"); err == nil || !strings.Contains(err.Error(), "--scale") {
		t.Errorf("--scale huge: %v", err)
	}
	if testing.Short() {
		t.Skip("runs the simulator for seconds")
	}
	out, err := run(t, simCmd, "--scale", "small", "--seed", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Lookup hops", "| 128 | 4 |", "Keys per real node over the mean", "crash at once", "partition healed", "Total run time"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
