// Package racebuild tells whether the binary was built with the race
// detector (go test -race), for tests that shrink their work or skip
// allocation counts under it: the detector slows parsing and rendering
// about tenfold, multiplies memory, and its instrumentation allocates.
package racebuild
