// Package testwait is the tests' one way to wait for something another
// goroutine or process does: For polls a condition, at growing
// intervals, until it holds or a deadline passes, and then fails the test
// naming what it waited for. Tests wait on conditions, not sleeps.
package testwait
