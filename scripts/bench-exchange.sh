#!/usr/bin/env bash
# bench-exchange.sh: issue 20's figures — export throughput (MB/s of WARC)
# from one store and ring-wide through the gateway of a four-node ring, as
# WARC and as WACZ, and CDX rows/s for a host query ring-wide against a
# plain index scan of the same rows — on one host of HEROD_BENCH_VERSIONS
# (default 100000) versions of 2 KB pages; and issue 39's stream figures
# (BenchmarkStream): whole-archive stream pages/s and MB/s from one store,
# ring-wide, and in 4 parts by 4 clients, against cat of the same segments.
#
# Usage: scripts/bench-exchange.sh   (HEROD_BENCH_VERSIONS=20000 for a quick run)
#        BENCH=BenchmarkStream scripts/bench-exchange.sh   (the stream figures only)
set -euo pipefail
cd "$(dirname "$0")/.."
bench="${BENCH:-BenchmarkExchange|BenchmarkStream}"
go test -run '^$' -bench "$bench" -benchtime "${BENCHTIME:-3x}" -count 1 -timeout 60m ./node |
	awk '/^Benchmark(Exchange|Stream)\// { sub("Benchmark(Exchange|Stream)/", "", $1); sub("-[0-9]+$", "", $1); out = sprintf("%-24s", $1); for (i = 3; i < NF; i += 2) out = out sprintf(" %s %s", $i, $(i+1)); print out }'
