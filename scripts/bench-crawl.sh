#!/usr/bin/env bash
# bench-crawl.sh: issue 5's crawl-rate numbers. In one run, on a loopback
# static site written to a temp dir, it times wget -r, one herod node and a
# ring of RING herod nodes on this machine crawling the whole site, ROUNDS
# times interleaved, and prints the medians as a table (the full log, with
# every round, is kept in $LOG). Two more rows bound what any Go crawler
# can do here: goget, a plain net/http client fetching every URL over one
# connection and discarding it, and gogetbusy, the same with one goroutine
# beside it compressing in a loop (one core of other work, as a crawler
# that stores and parses pages has).
#
# herod runs as shipped (storing, SHA-1, gzip, index, link forwarding) but
# without a per-host rate limit (HostRate 1e9), since wget has none either;
# each node keeps HOSTCONNS connections to the site (default 2; wget uses
# one: with one, every request waits for the previous answer's hand-offs
# between net/http's goroutines, which on a loaded machine each wait for
# the kernel, docs/crawl.md).
#
# Usage: scripts/bench-crawl.sh [extra go test flags, e.g. -cpuprofile cpu.prof,
# or -crawlbench.windowprofile /tmp/w for profiles of the timed crawls only]
# Environment: PAGES (3000), ROUNDS (3), RING (4), HOSTCONNS (2), BUDGET
# (ring: the shipped ring-wide host budget; none: no pacing at all), ONLY
# (comma-separated subset of wget,goget,gogetbusy,herod1,herod$RING), INPROC (1: serve the
# site from herod's test process instead of a process of its own), GZIP
# (herod's gzip level; 0: default), DICT (records before the archive trains
# its zstd dictionary; 0: default, -1: none, gzip records), NOSYNC (1: herod
# syncs nothing; not durable, shows what syncing costs), FORMEDTODAY (1: the
# ring crawls on the day it formed, claiming every fetch from the range's
# former owner; default: the nodes start a new day once the ring is
# stable), SCRATCH (directory for the site and the crawlers' output;
# default: the system's temporary directory), LOOPFS (1: use a fresh ext4
# file system with a journal, made in a sparse file and loop-mounted for
# this run; needs root), LOG.
#
# Where the files go matters on some machines: on ext4 without a journal
# (the development VM's root file system) every new inode skips the inodes
# freed in the last 1-6 minutes, one buffer lookup each, so a run that
# follows the deletion of an earlier run's files creates its files several
# times slower. LOOPFS=1 gives every run the same fresh file system.
set -euo pipefail

cd "$(dirname "$0")/.."
PAGES=${PAGES:-3000}
ROUNDS=${ROUNDS:-3}
RING=${RING:-4}
HOSTCONNS=${HOSTCONNS:-2}
BUDGET=${BUDGET:-ring}
ONLY=${ONLY:-}
INPROC=${INPROC:-}
GZIP=${GZIP:-0}
DICT=${DICT:-0}
NOSYNC=${NOSYNC:-}
FORMEDTODAY=${FORMEDTODAY:-}
SCRATCH=${SCRATCH:-}
LOOPFS=${LOOPFS:-}
LOG=${LOG:-$(mktemp -t bench-crawl.XXXXXX.log)}

if ! command -v go >/dev/null; then
	echo "bench-crawl: go is not installed" >&2
	exit 1
fi
if ! command -v wget >/dev/null; then
	echo "bench-crawl: wget is missing; installing it with apt-get" >&2
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq wget
fi

if [ -n "$LOOPFS" ]; then
	img=$(mktemp -t bench-crawl-fs.XXXXXX.img)
	SCRATCH=$(mktemp -d -t bench-crawl-fs.XXXXXX)
	trap 'umount "$SCRATCH" 2>/dev/null; rmdir "$SCRATCH"; rm -f "$img"' EXIT
	truncate -s 4G "$img"
	mkfs.ext4 -q -F "$img"
	if ! mount -o loop "$img" "$SCRATCH"; then
		echo "bench-crawl: LOOPFS=1 needs root and loop devices" >&2
		exit 1
	fi
fi
scratch=${SCRATCH:-${TMPDIR:-/tmp}}
dev=$(df --output=source "$scratch" | tail -1)
journal="no journal"
if ls /proc/fs/jbd2 2>/dev/null | grep -q "^$(basename "$dev")-"; then journal="journal"; fi
fsinfo="$(df --output=fstype "$scratch" | tail -1) on $dev ($journal)"

echo "bench-crawl: $PAGES pages, $ROUNDS rounds, ring of $RING, HostConns $HOSTCONNS, host budget $BUDGET, site in-process ${INPROC:-no}, gzip ${GZIP}, dict ${DICT}, nosync ${NOSYNC:-no}, formed today ${FORMEDTODAY:-no}; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench-crawl: wget $(wget --version | head -1 | cut -d' ' -f3), $(go version | cut -d' ' -f3); files in $scratch: $fsinfo; log in $LOG"
set +e
TMPDIR="$scratch" GOTMPDIR="$scratch" go test ./node -run '^TestCrawlRate$' -count=1 -timeout 60m -v \
	-crawlbench -crawlbench.pages "$PAGES" -crawlbench.rounds "$ROUNDS" \
	-crawlbench.ring "$RING" -crawlbench.hostconns "$HOSTCONNS" -crawlbench.budget "$BUDGET" -crawlbench.only "$ONLY" \
	-crawlbench.inproc="$([ -n "$INPROC" ] && echo true || echo false)" \
	-crawlbench.gzip "$GZIP" -crawlbench.dict "$DICT" -crawlbench.nosync="$([ -n "$NOSYNC" ] && echo true || echo false)" \
	-crawlbench.formedtoday="$([ -n "$FORMEDTODAY" ] && echo true || echo false)" \
	"$@" >"$LOG" 2>&1
status=$?
set -e
grep -E 'round [0-9]+ |file server|files under|GOMAXPROCS|ratio |deferred compression|response headers|streams: ' "$LOG" | sed 's/^ *crawlbench_test.go:[0-9]*: /  /' || true
echo
awk '
/^BenchmarkCrawlRate\/ratio-/ {
	name = $1; sub("BenchmarkCrawlRate/ratio-", "", name)
	ratios[++nr] = sprintf("%-22s %6sx", name, $5)
	next
}
/^BenchmarkCrawlRate\// {
	name = $1; sub("BenchmarkCrawlRate/", "", name)
	rows[++n] = sprintf("%-10s %8.0f %8d %10.2f %12.0f %5d", name, $5, $7, $3 / 1e9, $9, $2)
}
END {
	if (n == 0) exit
	printf "%-10s %8s %8s %10s %12s %5s\n", "crawler", "pages/s", "URLs", "seconds", "cpu-us/page", "runs"
	for (i = 1; i <= n; i++) print rows[i]
	for (i = 1; i <= nr; i++) print ratios[i]
}' "$LOG"
if [ $status -ne 0 ]; then
	echo "bench-crawl: go test failed (exit $status); see $LOG" >&2
	grep -E -- '--- FAIL|Error|error|FAIL' "$LOG" | head -20 >&2
	exit $status
fi
