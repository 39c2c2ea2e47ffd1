#!/usr/bin/env bash
# bench-realistic.sh: the realistic crawl benchmark (crawl.TestRealisticCrawl).
# One crawler with the real archive crawls realweb — 220 hosts on
# 127.0.0.2-221, every response 20-80 ms late, one page in 25 trickled over a
# second, a 1.5 MiB object per host — served by a process of its own. Each
# variant runs in a fresh process, ROUNDS times interleaved; the table shows
# medians and the ratio of each variant to "plain" (no special machinery)
# measured in the same run.
#
# Variants (comma-separated machinery in use; see crawl/realistic_test.go):
# plain, own (hand-written HTTP/1.1 client), gate (cpugate workers at nice
# +10 with spare processors), gc (cpugate.TuneGC), deferred (deferred
# compression, which only defers while the gate is busy: compare
# gate,deferred with gate). Politeness on = 1 req/s per host (the default), off = no
# budget.
#
# Environment: ROUNDS (3), CONCURRENCY (64), VARIANTS (plain own gate gc
# gate,deferred own,gate,gc,deferred), POLITE_VARIANTS (also run with politeness
# on; default plain and own,gate,gc,deferred), HOSTS, PAGES, LOG.
set -euo pipefail

cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
CONCURRENCY=${CONCURRENCY:-64}
VARIANTS=${VARIANTS:-"plain own gate gc gate,deferred own,gate,gc,deferred"}
POLITE_VARIANTS=${POLITE_VARIANTS:-"plain own,gate,gc,deferred"}
LOG=${LOG:-$(mktemp -t bench-realistic.XXXXXX.log)}
BIN=$(mktemp -t crawl.test.XXXXXX)
trap 'rm -f "$BIN"' EXIT
go test -c -o "$BIN" ./crawl

run() { # polite variant
	local v=$2
	[ "$v" = plain ] && v=
	HEROD_REALWEB=1 HEROD_REALWEB_POLITE=$1 HEROD_REALWEB_VARIANT=$v \
		HEROD_REALWEB_CONCURRENCY=$CONCURRENCY HEROD_REALWEB_HOSTS=${HOSTS:-} HEROD_REALWEB_PAGES=${PAGES:-} \
		"$BIN" -test.run '^TestRealisticCrawl$' -test.count=1 -test.v 2>&1 | grep 'realweb:' | sed 's/.*realweb: //' | tee -a "$LOG"
}

for r in $(seq "$ROUNDS"); do
	echo "# round $r" | tee -a "$LOG"
	for v in $VARIANTS; do run 0 "$v"; done
	for v in $POLITE_VARIANTS; do run 1 "$v"; done
done

# Medians per (variant, polite) and ratios to plain with the same politeness.
awk '
function kv(s,   a, i, p) { split(s, a, " "); for (i in a) { split(a[i], p, "="); f[p[1]] = p[2] } }
function median(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^variant=/ {
	delete f; kv($0); k = f["variant"] " " f["polite"]
	if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
	for (m in f) vals[k, m] = vals[k, m] " " f[m]
}
END {
	printf "%-24s %-6s %8s %8s %14s %8s %7s %7s %5s %8s %8s\n", "variant", "polite", "pages/s", "ratio", "cpu s/1000 pg", "ratio", "rss MB", "polit.", "lat.", "cpu", "runs"
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, kp, " "); base = "plain " kp[2]
		ps = median(vals[k, "pages_per_s"]); cs = median(vals[k, "cpu_s_per_1000"])
		bps = median(vals[base, "pages_per_s"]); bcs = median(vals[base, "cpu_s_per_1000"])
		printf "%-24s %-6s %8.1f %8.2f %14.3f %8.2f %7.0f %7.2f %5.2f %8.2f %8d\n", kp[1], kp[2], ps, (bps ? ps / bps : 0), cs, (bcs ? cs / bcs : 0),
			median(vals[k, "peak_rss_mb"]), median(vals[k, "politeness"]), median(vals[k, "latency"]), median(vals[k, "cpu"]), split(vals[k, "pages"], x, " ")
	}
}' "$LOG"
echo "log: $LOG"
