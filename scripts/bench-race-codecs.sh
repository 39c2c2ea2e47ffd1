#!/usr/bin/env bash
# bench-race-codecs.sh: what leaving klauspost/compress uninstrumented
# saves the race detector (docs/testing.md). Builds one package's race
# test binary twice, with every package instrumented and with what
# .ci/run's race_flags leave out, then runs the chosen tests with each in
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
# The packages left out are those .ci/run leaves out: read its race_flags.
gcflags=$(sed -n "s/^race_flags=(-race -gcflags='\(.*\)')\$/\1/p" .ci/run)
if [ -z "$gcflags" ]; then
	echo "no race_flags=(-race -gcflags='...') line in .ci/run" >&2
	exit 1
fi
go test -race -c -o "$out/all.test" "$pkg"
go test -race -gcflags="$gcflags" -c -o "$out/codecs-out.test" "$pkg"

run() { # run NAME: one run of that binary; its wall and CPU seconds to $out/NAME.wc
	(cd "$pkg" && /usr/bin/time -f '%e %U %S' "$out/$1.test" -test.run "$tests" -test.count 1 >"$out/$1.log" 2>"$out/$1.time") ||
		{ echo "$1 failed:" >&2; cat "$out/$1.log" "$out/$1.time" >&2; exit 1; }
	awk 'END{printf "%.1f %.1f\n", $1, $2+$3}' "$out/$1.time" >"$out/$1.wc"
}

printf '%-5s %-28s %-28s %s\n' pair 'all instrumented wall/CPU s' 'codecs left out wall/CPU s' 'CPU ratio'
for i in $(seq 1 "$pairs"); do
	run all
	run codecs-out
	read -r aw ac <"$out/all.wc"
	read -r bw bc <"$out/codecs-out.wc"
	printf '%-5s %-28s %-28s %.2f\n' "$i" "$aw / $ac" "$bw / $bc" "$(awk -v a="$ac" -v b="$bc" 'BEGIN{print b/a}')"
done
