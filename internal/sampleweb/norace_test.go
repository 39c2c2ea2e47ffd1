//go:build !race

package sampleweb

// raceEnabled shortens the slowest tests under the race detector, which
// makes rendering and parsing about ten times slower.
const raceEnabled = false
