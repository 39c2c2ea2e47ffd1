package cpugate

import (
	"os"

	"golang.org/x/sys/unix"
)

// lowerPriority raises the calling thread's nice value by n (Linux keeps
// one per thread); an unprivileged process may raise it but not lower it
// back, which is why the workers' threads never serve anything else.
func lowerPriority(n int) error {
	tid := unix.Gettid()
	cur, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return err
	}
	// The raw syscall returns 20 - nice.
	return unix.Setpriority(unix.PRIO_PROCESS, tid, min(19, 20-cur+n))
}

// mainThread reports whether the calling thread is the process's first.
func mainThread() bool { return unix.Gettid() == os.Getpid() }
