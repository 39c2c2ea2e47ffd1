// Package buildinfo reports what herod binary is running: its module
// version, the Go version that built it and the VCS revision it was built
// from, as runtime/debug.ReadBuildInfo records them. `herod version`
// prints them and every node exports them as the herod_build_info metric.
// It holds no state; its functions are safe for concurrent use.
package buildinfo
