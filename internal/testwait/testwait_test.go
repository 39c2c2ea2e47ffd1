package testwait

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestUntil: a condition that comes true is waited for; one that never
// does fails after the deadline, with its last error.
func TestUntil(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if err := Until(10*time.Second, func() bool { return n.Load() == 3 }); err != nil {
		t.Fatal(err)
	}
	calls := 0
	if err := Until(5*time.Second, func() error {
		calls++
		if calls < 4 {
			return errors.New("three to go")
		}
		return nil
	}); err != nil || calls != 4 {
		t.Fatalf("error condition: %v after %d calls", err, calls)
	}
	start := time.Now()
	err := Until(30*time.Millisecond, func() error { return errors.New("the node is down") })
	if err == nil || !strings.Contains(err.Error(), "the node is down") || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("never true: %v after %v", err, time.Since(start))
	}
	if err := Until(10*time.Millisecond, func() bool { return false }); err == nil {
		t.Fatal("a false condition passed")
	}
}
