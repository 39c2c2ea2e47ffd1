#!/usr/bin/env bash
# bench-segments.sh: durable additions on one core (GOMAXPROCS=1) of the
# segment store (this tree) against the one-file-per-version store (BASE,
# default the last commit before segments), in alternated pairs on the
# same machine; then this tree's store-only additions (ready records and
# imports, BenchmarkAppendDurable) and its disk figures.
#
# Usage: scripts/bench-segments.sh [BASE [PAIRS]]
# Environment: N (Puts per benchmark, default 2000), HEROD_HTML_CORPUS (a
# directory of .html files for the disk figures; default the sample web).
# Prints, per pair and benchmark, adds per CPU-second and per wall second
# of both sides and their ratio (this / base).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-a8a8df0}
pairs=${2:-3}
n=${N:-2000}
bench='BenchmarkPut$/fsync/gzip6|BenchmarkPutParallel/window'

old=$(mktemp -d -t bench-seg-base.XXXXXX)
trap 'rm -rf "$old"' EXIT
git archive "$base" | tar -x -C "$old"

run() { # dir -> "name adds/cpu-s adds/s" lines
	(cd "$1" && go test -run XXX -bench "$bench" -benchtime "${n}x" -cpu 1 ./archive/) 2>&1 |
		awk '/^Benchmark/{name=$1; sub(/-[0-9]+$/, "", name); c=""; w="";
			for (i = 1; i < NF; i++) { if ($(i+1) == "adds/cpu-s") c=$i; if ($(i+1) == "adds/s") w=$i }
			print name, c, w}'
}
for i in $(seq 1 "$pairs"); do
	run "$old" >"$old/base.$i"
	run . >"$old/this.$i"
	join "$old/base.$i" "$old/this.$i" | awk -v i="$i" '{printf "pair %d %-38s base %7.0f adds/cpu-s %6.0f adds/s   this %7.0f adds/cpu-s %6.0f adds/s   ratio %.2f cpu, %.2f wall\n", i, $1, $2, $3, $4, $5, $4/$2, $5/$3}'
done
go test -run XXX -bench 'BenchmarkAppendDurable' -benchtime "$((n * 4))x" -cpu 1 ./archive/ | grep '^Benchmark'
go test -run XXX -bench 'BenchmarkSegmentDisk' -benchtime 1x ./archive/ | grep '^Benchmark'
