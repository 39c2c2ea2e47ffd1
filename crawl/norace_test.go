//go:build !race

package crawl

// raceEnabled: see race_test.go.
const raceEnabled = false
