#!/usr/bin/env bash
# bench-ring-realistic.sh: what crawling as a ring costs on a realistic
# network (node.TestRingOverheadRealistic). One node, then a ring of RING
# nodes in one process, crawl all of internal/realweb (220 hosts, answers
# 20-80 ms late, served by a process of its own), ROUNDS times alternated;
# each ring is stable and on a new day before the clock starts, with
# replication off. It prints each crawl's CPU seconds per 1,000 pages and
# the median of the rounds' ratios, ring over one node.
#
# Environment: RING (4), ROUNDS (4), POLITE (1: the shipped 1 request a
# second per host; 0: no budget), FORMEDTODAY (1: the ring crawls on the
# day it formed, claiming each fetch from the range's former owner),
# REPLICAS (k: the ring replicates as shipped and is timed until its
# stores hold k copies of every version; unset: replication off), HOSTS,
# PAGES (realweb's size), LOG, PROCESSES (1: each node a herod run
# process of its own, cmd/herod.TestProcessesRingOverhead: the CPU is the
# sum of the processes', the ring crawls on the day it formed, k = 3),
# CPUPROF (a directory: with PROCESSES=1, each process's CPU profile in
# CPUPROF/round<r>-nodes<n>/herod-<pid>.cpu.prof).
set -euo pipefail

cd "$(dirname "$0")/.."
LOG=${LOG:-$(mktemp -t bench-ring-realistic.XXXXXX.log)}
echo "bench-ring-realistic: ring of ${RING:-4}, ${ROUNDS:-4} rounds, politeness ${POLITE:-1}, formed today ${FORMEDTODAY:-no}, replicas ${REPLICAS:-off}; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); log in $LOG"
if [[ ${PROCESSES:-} == 1 ]]; then
	HEROD_PROCESS_TESTS=1 HEROD_REALWEB=1 HEROD_REALWEB_RING=${RING:-4} HEROD_REALWEB_ROUNDS=${ROUNDS:-4} \
		HEROD_REALWEB_POLITE=${POLITE:-1} HEROD_REALWEB_HOSTS=${HOSTS:-} HEROD_REALWEB_PAGES=${PAGES:-} \
		HEROD_CPUPROFILE=${CPUPROF:+$(realpath -m "$CPUPROF")} \
		go test ./cmd/herod -run '^TestProcessesRingOverhead$' -count=1 -timeout 90m -v >"$LOG" 2>&1 || {
		echo "bench-ring-realistic: go test failed; see $LOG" >&2
		exit 1
	}
	grep 'realweb processes:' "$LOG" | sed 's/.*realweb processes: //'
	exit 0
fi
HEROD_REALWEB=1 HEROD_REALWEB_RING=${RING:-4} HEROD_REALWEB_ROUNDS=${ROUNDS:-4} HEROD_REALWEB_POLITE=${POLITE:-1} \
	HEROD_REALWEB_FORMEDTODAY=${FORMEDTODAY:-} HEROD_REALWEB_REPLICAS=${REPLICAS:-} \
	HEROD_REALWEB_HOSTS=${HOSTS:-} HEROD_REALWEB_PAGES=${PAGES:-} \
	go test ./node -run '^TestRingOverheadRealistic$' -count=1 -timeout 60m -v >"$LOG" 2>&1 || {
	echo "bench-ring-realistic: go test failed; see $LOG" >&2
	exit 1
}
grep 'realweb ring:' "$LOG" | sed 's/.*realweb ring: //'
