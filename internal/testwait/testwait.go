package testwait

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Cond is what For waits for: a func() bool that reports done, or a
// func() error that returns nil when done (and says what is missing
// otherwise).
type Cond interface {
	func() bool | func() error
}

// For waits up to d for cond to hold: it checks it at once, then after a
// millisecond, the interval doubling up to 50 ms. When d passes first it
// fails t (Fatalf) naming what it waited for, with cond's last error if
// cond returns one. It must be called from the test's goroutine.
func For[C Cond](t testing.TB, what string, d time.Duration, cond C) {
	t.Helper()
	if err := Until(d, cond); err != nil {
		t.Fatalf("%s: not within %v: %v", what, d, err)
	}
}

// Until is For for code that reports rather than fails: nil once cond
// holds, else, after d, cond's last error ("still false" for a bool).
func Until[C Cond](d time.Duration, cond C) error {
	check := func() error {
		switch c := any(cond).(type) {
		case func() bool:
			if c() {
				return nil
			}
			return errNotYet
		case func() error:
			return c()
		}
		panic(fmt.Sprintf("testwait: condition of type %T", cond))
	}
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// errNotYet is a func() bool condition's "not yet".
var errNotYet = errors.New("still false")
