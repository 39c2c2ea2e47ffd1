#!/usr/bin/env bash
# bench-exchange.sh: issue 20's figures — export throughput (MB/s of WARC)
# from one store and ring-wide through the gateway of a four-node ring, as
# WARC and as WACZ, and CDX rows/s for a host query ring-wide against a
# plain index scan of the same rows — on one host of HEROD_BENCH_VERSIONS
# (default 100000) versions of 2 KB pages.
#
# Usage: scripts/bench-exchange.sh   (HEROD_BENCH_VERSIONS=20000 for a quick run)
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench BenchmarkExchange -benchtime "${BENCHTIME:-3x}" -count 1 -timeout 60m ./node |
	awk '/^BenchmarkExchange\// { sub("BenchmarkExchange/", "", $1); sub("-[0-9]+$", "", $1); printf "%-24s %s %s\n", $1, $(NF-1), $NF }'
