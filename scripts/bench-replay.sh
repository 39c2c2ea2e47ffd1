#!/usr/bin/env bash
# bench-replay.sh: replay latency and throughput of this tree against
# another commit (issue 18: framing must cost at most 10%), in alternated
# runs, so that both see the same machine (these machines are shared and
# noisy: compare ratios taken in one session, not runs hours apart).
#
# Usage: scripts/bench-replay.sh [BASE [PAIRS [BENCHTIME]]]
#   BASE       the commit to compare with (default 0f844c9, the gateway
#              before two origins and framing)
#   PAIRS      base/this pairs to run (default 5)
#   BENCHTIME  go test -benchtime of each run (default 3s)
#
# Both sides run gateway/gatewaytest's BenchmarkReplayView from this tree
# (replaybench_test.go): a reader's view of a sample-web page through real
# HTTP, the framed page and its frame's document when the gateway frames
# ("doc"), and with the page's embedded objects ("page", a first visit).
# The base gets a replayServers of its own API (one origin, one handler).
# It prints each run's ms/view (serial), views/s (8 parallel readers) and
# the process's CPU per view (serial; gateway and reader together, which
# other processes on a shared machine disturb less than the wall clock),
# then the medians and the ratios this/base (latency and CPU: lower is
# better; throughput: higher is better).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-0f844c9}
pairs=${2:-5}
benchtime=${3:-3s}

wt=$(mktemp -d -t bench-replay.XXXXXX)
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"' EXIT
git worktree add --detach "$wt" "$base" >/dev/null 2>&1
cp gateway/gatewaytest/replaybench_test.go "$wt/gateway/gatewaytest/"
cat >"$wt/gateway/gatewaytest/replaybench_setup_test.go" <<'GO'
package gatewaytest

import (
	"net/http/httptest"
	"testing"

	"github.com/herod-archive/herod/gateway"
)

// replayServers serves the single-origin gateway of this commit.
func replayServers(tb testing.TB, a gateway.Archive) string {
	tb.Helper()
	gw, err := gateway.New(gateway.Config{Archive: a})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	tb.Cleanup(srv.Close)
	return srv.URL
}
GO

out=$(mktemp -d -t bench-replay-out.XXXXXX)
run() { # side dir
	(cd "$2" && go test -run XXX -bench ReplayView -benchtime "$benchtime" -count 1 ./gateway/gatewaytest/) >"$out/$1" 2>&1 || {
		echo "bench-replay: $1 failed:" >&2; tail -20 "$out/$1" >&2; exit 1
	}
	metric() { awk -v b="$1" -v u="$2" 'index($1, b) {for(i=1;i<=NF;i++) if($(i+1)==u) print $i}' "$out/$3"; }
	dm=$(metric ReplayView/doc/serial ms/view "$1"); dv=$(metric ReplayView/doc/parallel views/s "$1")
	pm=$(metric ReplayView/page/serial ms/view "$1"); pv=$(metric ReplayView/page/parallel views/s "$1")
	dc=$(metric ReplayView/doc/serial cpu-us/view "$1"); pc=$(metric ReplayView/page/serial cpu-us/view "$1")
	echo "$1 $dm $dv $pm $pv $dc $pc" >>"$out/all"
	printf '%-8s doc: %7s ms/view %8s views/s %7s cpu-us/view   page: %7s ms/view %8s views/s %7s cpu-us/view\n' \
		"$1" "$dm" "$dv" "$dc" "$pm" "$pv" "$pc"
}
for i in $(seq 1 "$pairs"); do
	run "base.$i" "$wt"
	run "this.$i" .
done
awk '
function median(a, n,   i, j, t) {
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	split($1, s, ".")
	if (s[1] == "base") { n = ++nb; for (k = 2; k <= 7; k++) b[k, n] = $k }
	else { n = ++nt; for (k = 2; k <= 7; k++) t[k, n] = $k }
}
END {
	split("x doc-latency doc-throughput page-latency page-throughput doc-cpu page-cpu", name, " ")
	split("x ms/view views/s ms/view views/s cpu-us/view cpu-us/view", unit, " ")
	for (k = 2; k <= 7; k++) {
		for (i = 1; i <= nb; i++) x[i] = b[k, i]; mb = median(x, nb)
		for (i = 1; i <= nt; i++) y[i] = t[k, i]; mt = median(y, nt)
		printf "median %-16s base %9.3f %s  this %9.3f %s  this/base %.3f\n", name[k], mb, unit[k], mt, unit[k], mt / mb
	}
}' "$out/all"
echo "bench-replay: full outputs in $out"
