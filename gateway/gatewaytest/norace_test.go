//go:build !race

package gatewaytest

// raceEnabled: see race_test.go.
const raceEnabled = false
