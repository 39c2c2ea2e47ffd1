//go:build race

package gatewaytest

// raceEnabled: the race detector multiplies memory and CPU, so the load
// test checks only that the load is served, not its figures.
const raceEnabled = true
