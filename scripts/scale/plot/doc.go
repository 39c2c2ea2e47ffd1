// Command plot draws the scale benchmark's figure (docs/scale.md) from
// the JSON rows TestScale writes: per day and per size, CPU seconds per
// 1,000 pages, peak RSS, the rollover's time and the longest stall of
// link intake, as one SVG (or PNG) of four panels; and prints the runs'
// tables in Markdown (a summary with ratios to the first run, then the
// days of each run).
//
// Usage:
//
//	go run . -o ../../../docs/scale.svg scale-10000x30.json scale-100000x8.json
//
// It is a module of its own so that herod's module does not depend on a
// plotting library.
package main
