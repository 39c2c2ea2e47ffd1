#!/usr/bin/env bash
# bench-race-codecs.sh: what leaving klauspost/compress uninstrumented
# saves the race detector (.ci/run does; docs/testing.md). Builds one
# package's race test binary twice, with every package instrumented and
# with the codecs left out, then runs the chosen tests with each in
# turn, PAIRS times, and prints each run's wall and CPU seconds and the
# CPU ratio of each pair (codecs left out / all instrumented).
#
# Usage: scripts/bench-race-codecs.sh [PKG [TESTS [PAIRS]]]
#   PKG    default ./node
#   TESTS  a -test.run pattern, default the ring tests
#          '^(TestRingStreams|TestPushReplicatesWithinBound)$'
#   PAIRS  default 3
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=${1:-./node}
tests=${2:-'^(TestRingStreams|TestPushReplicatesWithinBound)$'}
pairs=${3:-3}

out=$(mktemp -d -t race-codecs.XXXXXX)
trap 'rm -rf "$out"' EXIT
go test -race -c -o "$out/all.test" "$pkg"
go test -race -gcflags='github.com/klauspost/compress/...=-race=false' -c -o "$out/codecs-out.test" "$pkg"

run() { # run NAME: prints "wall cpu" of one run of that binary
	(cd "$pkg" && /usr/bin/time -f '%e %U %S' "$out/$1.test" -test.run "$tests" -test.count 1 >"$out/$1.log" 2>"$out/$1.time") ||
		{ echo "$1 failed:"; cat "$out/$1.log"; exit 1; }
	awk 'END{printf "%.1f %.1f\n", $1, $2+$3}' "$out/$1.time"
}

printf '%-5s %-28s %-28s %s\n' pair 'all instrumented wall/CPU s' 'codecs left out wall/CPU s' 'CPU ratio'
for i in $(seq 1 "$pairs"); do
	read -r aw ac < <(run all)
	read -r bw bc < <(run codecs-out)
	printf '%-5s %-28s %-28s %.2f\n' "$i" "$aw / $ac" "$bw / $bc" "$(awk -v a="$ac" -v b="$bc" 'BEGIN{print b/a}')"
done
