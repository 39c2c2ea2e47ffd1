// Command plot draws the scale benchmark's figure (docs/scale.md) from
// the JSON rows TestScale writes: per day and per size, CPU seconds per
// 1,000 pages, peak RSS, the rollover's time and the longest stall of
// link intake, as one SVG (or PNG) of four panels; and prints the runs'
// tables in Markdown (a summary with ratios to the first run, then the
// days of each run). With -base N the first N files are repeated runs of
// the baseline (run.sh's BASE_RUNS): the ratios divide by the medians of
// their CPU figures, day 0 and later days apart, and the figure draws
// the first of them.
//
// Usage:
//
//	go run . -o ../../../docs/scale.svg scale-10000x30.json scale-100000x8.json
//	go run . -base 3 scale-10000x3-1.json scale-10000x3-2.json scale-10000x3-3.json scale-1000000x3.json
//
// It is a module of its own so that herod's module does not depend on a
// plotting library.
package main
