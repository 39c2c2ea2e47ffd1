#!/usr/bin/env bash
# bench-ab.sh: the crawl-rate bench of this tree against another commit, in
# alternated runs, so that both see the same machine (these machines are
# shared and noisy: compare ratios taken in one pair, not runs hours apart).
#
# Usage: scripts/bench-ab.sh BASE [PAIRS [THIS]]
#   BASE   a commit (checked out into a temporary worktree)
#   PAIRS  how many base/this pairs to run (default 4)
#   THIS   a commit to compare instead of the work tree (also checked out,
#          so that the work tree may change while the pairs run)
# The environment goes to scripts/bench-crawl.sh (default here:
# LOOPFS=1 ONLY=wget,herod1 ROUNDS=3). The last lines print, for every
# pair, herod 1 node / wget and herod's pages/s and CPU per page.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/bench-ab.sh BASE [PAIRS [THIS]]}
pairs=${2:-4}
this=${3:-}
export LOOPFS=${LOOPFS-1} ONLY=${ONLY-wget,herod1} ROUNDS=${ROUNDS-3}

wt=$(mktemp -d -t bench-ab.XXXXXX)
tt=.
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"; [ "$tt" = . ] || git worktree remove --force "$tt" >/dev/null 2>&1 || rm -rf "$tt"' EXIT
git worktree add --detach "$wt" "$base" >/dev/null 2>&1
if [ -n "$this" ]; then
	tt=$(mktemp -d -t bench-ab-this.XXXXXX)
	git worktree add --detach "$tt" "$this" >/dev/null 2>&1
fi
# The base runs this tree's bench script when it has none of its own.
[ -f "$wt/scripts/bench-crawl.sh" ] || cp scripts/bench-crawl.sh "$wt/scripts/"

summary() { # the table's herod1 row and ratio, on one line
	awk '/^herod1 /{p=$2; c=$5} /^herod1-wget/{r=$2} END{printf "%s  herod1 %s pages/s, %s us/page", r, p, c}' "$1"
}
out=$(mktemp -d -t bench-ab-out.XXXXXX)
for i in $(seq 1 "$pairs"); do
	for side in base this; do
		dir=$tt
		[ "$side" = base ] && dir=$wt
		(cd "$dir" && scripts/bench-crawl.sh) >"$out/$side.$i" 2>&1 || {
			echo "bench-ab: $side run $i failed:" >&2; tail -20 "$out/$side.$i" >&2; exit 1
		}
		echo "pair $i $side ($([ "$side" = base ] && git rev-parse --short "$base" || { [ -n "$this" ] && git rev-parse --short "$this" || echo work tree; })): $(summary "$out/$side.$i")"
	done
done
echo "bench-ab: full outputs in $out"
