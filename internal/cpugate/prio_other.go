//go:build !linux

package cpugate

import "errors"

// lowerPriority is Linux-only (a per-thread nice value); elsewhere the
// workers run at the normal priority.
func lowerPriority(int) error { return errors.New("cpugate: no per-thread priority here") }

// mainThread is false where threads keep no priority of their own.
func mainThread() bool { return false }
