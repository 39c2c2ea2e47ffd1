#!/usr/bin/env bash
# run.sh: the scale benchmark (docs/scale.md). One herod node (in process,
# node.TestScale) crawls a synthetic web served by scripts/scale/webgen, a
# process of its own, for a number of compressed days; each run writes
# scale-<urls>x<days>.csv and .json (one row a day) to OUT. Then the plot
# program draws OUT/scale.svg and prints the Markdown tables (summary with
# ratios to the first run, then each run's days) to OUT/tables.md; the tests'
# whole output (failures' details included) goes to OUT/test.log.
#
# Usage: scripts/scale/run.sh [urls:days ...]   (default: 10000:30 100000:30)
# Environment: OUT (default ./scale-out), SEED (the web's seed, default 1),
# NODES (a ring of that many nodes with replication, default 1), HOSTRATE
# (requests a second to one host, default 1e9: no politeness wait),
# BASE_RUNS=N (run the first size N times, half of them before the other sizes
# and the rest after: the tables divide by the medians of its CPU figures, which
# move by 10-20% between runs of a 10 K web; files scale-<run>-<i>.*, profiles
# those of the last repeat),
# HEAP=1 (a heap profile at each day's end), CPUPROF=N (a CPU profile of day N;
# N,M,... of each day named),
# GOMEMLIMIT (the node process's Go memory limit, default 448MiB for one
# node, the budget under which docs/scale.md states RSS, and off for a
# ring; "off" for none).
set -euo pipefail

cd "$(dirname "$0")/../.."
OUT=${OUT:-$(pwd)/scale-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ "${NODES:-1}" -gt 1 ]; then memlimit=${GOMEMLIMIT:-off}; else memlimit=${GOMEMLIMIT:-448MiB}; fi
base=${BASE_RUNS:-1}
if ! [[ "$base" =~ ^[1-9][0-9]*$ ]]; then
	echo "run.sh: BASE_RUNS=$base: want a whole number, 1 or more" >&2
	exit 2
fi
BIN=$(mktemp -d -t herod-scale.XXXXXX)
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/webgen" ./scripts/scale/webgen
go test -c -o "$BIN/node.test" ./node

runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(10000:30 100000:30)
# The baseline's repeats: half before the other sizes, the rest after.
before=$(((base + 1) / 2))
order=()
for ((i = 1; i <= before; i++)); do order+=("${runs[0]}#$i"); done
order+=("${runs[@]:1}")
for ((i = before + 1; i <= base; i++)); do order+=("${runs[0]}#$i"); done
basejsons=()
jsons=()
for spec in "${order[@]}"; do
	r=${spec%#*}
	echo "# run $r (nodes ${NODES:-1}, $(date -u +%FT%TZ), load $(cut -d' ' -f1 /proc/loadavg), GOMEMLIMIT $memlimit)" | tee -a "$OUT/log"
	(cd node && GOMEMLIMIT="$memlimit" HEROD_SCALE="$r" HEROD_SCALE_OUT="$OUT" HEROD_SCALE_WEBGEN="$BIN/webgen" \
		HEROD_SCALE_SEED="${SEED:-1}" HEROD_SCALE_NODES="${NODES:-1}" HEROD_SCALE_HOSTRATE="${HOSTRATE:-}" HEROD_SCALE_HEAPPROFILE="${HEAP:-}" HEROD_SCALE_CPUPROFILE="${CPUPROF:-}" \
		"$BIN/node.test" -test.run '^TestScale$' -test.v -test.timeout 0 2>&1 | tee -a "$OUT/test.log" |
		grep --line-buffered -E 'scale:|FAIL|PASS|panic' | sed -u 's/.*scale: //' | tee -a "$OUT/log")
	echo "# end $r ($(date -u +%FT%TZ), load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$OUT/log"
	name=${r/:/x}
	[ "${NODES:-1}" -gt 1 ] && name+="x${NODES}n"
	if [ "$spec" = "$r" ]; then
		jsons+=("$OUT/scale-$name.json")
		continue
	fi
	if [ "$base" -gt 1 ]; then # a repeat of the baseline: files of its own
		for suf in .json .csv -dbs.csv; do
			if [ -e "$OUT/scale-$name$suf" ]; then mv "$OUT/scale-$name$suf" "$OUT/scale-$name-${spec##*#}$suf"; fi
		done
		name+="-${spec##*#}"
	fi
	basejsons+=("$OUT/scale-$name.json")
done
(cd scripts/scale/plot && go run . -o "$OUT/scale.svg" -base "$base" "${basejsons[@]}" "${jsons[@]}") | tee "$OUT/tables.md"
echo "figure: $OUT/scale.svg; tables: $OUT/tables.md"
