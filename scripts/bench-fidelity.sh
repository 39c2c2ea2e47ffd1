#!/usr/bin/env bash
# bench-fidelity.sh: replay fidelity (issue 19) of this tree against
# another commit, on the fidelity sample site (internal/fidelityweb),
# crawled by herod's crawler and loaded live and through the gateway in
# headless Chromium (gateway/gatewaytest TestFidelity).
#
# Usage: scripts/bench-fidelity.sh [BASE [PAGES]]
#   BASE   the commit to compare with (default 6b913a3: before the
#          crawler archived what scripts load and requisites' redirect
#          targets, issue 19's last step)
#   PAGES  pages of the sample site (default 20; 3 more URLs are loaded:
#          a page by a redirecting URL, a plain-text file and a PDF)
#
# The base runs this tree's benchmark (the test, the sample site, the
# browser driver and go.mod) against its own gateway. Each side prints one
# "fidelity:" line; screenshots of pages that differ go to
# $out/<side>/.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-6b913a3}
pages=${2:-20}

wt=$(mktemp -d -t bench-fidelity.XXXXXX)
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"' EXIT
git worktree add --detach "$wt" "$base" >/dev/null 2>&1
cp go.mod go.sum "$wt/"
mkdir -p "$wt/internal/fidelityweb"
cp internal/fidelityweb/*.go "$wt/internal/fidelityweb/"
cp internal/browsertest/browsertest.go "$wt/internal/browsertest/"
cp gateway/gatewaytest/chrome_test.go gateway/gatewaytest/fidelity_test.go "$wt/gateway/gatewaytest/"

out=$(mktemp -d -t bench-fidelity-out.XXXXXX)
run() { # side dir
	mkdir -p "$out/$1"
	(cd "$2" && HEROD_FIDELITY=1 HEROD_FIDELITY_PAGES="$pages" HEROD_FIDELITY_OUT="$out/$1" HEROD_REQUIRE_BROWSER=1 \
		go test -run 'TestFidelity$' -count 1 -v ./gateway/gatewaytest/) >"$out/$1.log" 2>&1 || {
		echo "bench-fidelity: $1 failed:" >&2; grep -v '^\s*\[' "$out/$1.log" | tail -20 >&2; exit 1
	}
	printf '%-6s %s\n' "$1" "$(grep -m1 '^fidelity:' "$out/$1.log")"
}
run base "$wt"
run this .
echo "bench-fidelity: logs and screenshots in $out"
