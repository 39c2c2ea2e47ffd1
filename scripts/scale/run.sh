#!/usr/bin/env bash
# run.sh: the scale benchmark (docs/scale.md). One herod node (in process,
# node.TestScale) crawls a synthetic web served by scripts/scale/webgen, a
# process of its own, for a number of compressed days; each run writes
# scale-<urls>x<days>.csv and .json (one row a day) to OUT. Then the plot
# program draws OUT/scale.svg and prints the Markdown tables (summary with
# ratios to the first run, then each run's days) to OUT/tables.md.
#
# Usage: scripts/scale/run.sh [urls:days ...]   (default: 10000:30 100000:30)
# Environment: OUT (default ./scale-out), SEED (the web's seed, default 1),
# NODES (a ring of that many nodes with replication, default 1),
# HEAP=1 (a heap profile at each day's end), CPUPROF=N (a CPU profile of day N),
# GOMEMLIMIT (the node process's Go memory limit, default 448MiB for one
# node, the budget under which docs/scale.md states RSS, and off for a
# ring; "off" for none).
set -euo pipefail

cd "$(dirname "$0")/../.."
OUT=${OUT:-$(pwd)/scale-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ "${NODES:-1}" -gt 1 ]; then memlimit=${GOMEMLIMIT:-off}; else memlimit=${GOMEMLIMIT:-448MiB}; fi
BIN=$(mktemp -d -t herod-scale.XXXXXX)
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/webgen" ./scripts/scale/webgen
go test -c -o "$BIN/node.test" ./node

runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(10000:30 100000:30)
jsons=()
for r in "${runs[@]}"; do
	echo "# run $r (nodes ${NODES:-1}, $(date -u +%FT%TZ), load $(cut -d' ' -f1 /proc/loadavg), GOMEMLIMIT $memlimit)" | tee -a "$OUT/log"
	(cd node && GOMEMLIMIT="$memlimit" HEROD_SCALE="$r" HEROD_SCALE_OUT="$OUT" HEROD_SCALE_WEBGEN="$BIN/webgen" \
		HEROD_SCALE_SEED="${SEED:-1}" HEROD_SCALE_NODES="${NODES:-1}" HEROD_SCALE_HEAPPROFILE="${HEAP:-}" HEROD_SCALE_CPUPROFILE="${CPUPROF:-}" \
		"$BIN/node.test" -test.run '^TestScale$' -test.v -test.timeout 0 2>&1 |
		grep --line-buffered -E 'scale:|FAIL|PASS|panic' | sed -u 's/.*scale: //' | tee -a "$OUT/log")
	echo "# end $r ($(date -u +%FT%TZ), load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/log"
	name=${r/:/x}
	[ "${NODES:-1}" -gt 1 ] && name+="x${NODES}n"
	jsons+=("$OUT/scale-$name.json")
done
(cd scripts/scale/plot && go run . -o "$OUT/scale.svg" "${jsons[@]}") | tee "$OUT/tables.md"
echo "figure: $OUT/scale.svg; tables: $OUT/tables.md"
