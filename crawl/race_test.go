//go:build race

package crawl

// raceEnabled shrinks the heaviest tests under the race detector, which
// slows parsing and the sample web's rendering tenfold.
const raceEnabled = true
