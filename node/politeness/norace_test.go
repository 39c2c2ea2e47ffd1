//go:build !race

package politeness

// raceEnabled: see race_test.go.
const raceEnabled = false
