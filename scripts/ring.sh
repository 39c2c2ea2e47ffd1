#!/usr/bin/env bash
# ring.sh: start, inspect and stop a local ring of herod processes on
# loopback, each node on an address of its own (127.0.0.11, .12, ...), so
# that they are distinct hosts to the ring (virtual-server ids derive from
# the IP). Each node's data and log live under $DIR/nodeN.
#
# Usage:
#   scripts/ring.sh start [N]     build herod and start N nodes (default 5)
#   scripts/ring.sh add           start one more node, joining the ring
#   scripts/ring.sh status        herod status of every node
#   scripts/ring.sh seed URL...   hand URLs to the first node
#   scripts/ring.sh kill I        kill -9 node I (1-based)
#   scripts/ring.sh restart I     start node I again on its data
#   scripts/ring.sh stop          SIGTERM every node (they leave the ring)
#
# Environment: DIR (default /tmp/herod-ring), DAY (crawl day, default 24h),
# BASE (first address's last byte, default 11), HEROD (binary; default:
# built from this checkout into $DIR/herod), EXTRA (more flags for every
# node, e.g. "--allow-private 127.0.0.0/8 --host-rate 50").
set -euo pipefail
DIR=${DIR:-/tmp/herod-ring}
DAY=${DAY:-24h}
BASE=${BASE:-11}
EXTRA=${EXTRA:-}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$DIR"

# ensure sets B to the herod binary, building it once per run of this
# script for start, add and restart (status, seed and stop reuse it).
ensure() {
	if [[ -n ${B:-} ]]; then return; fi
	if [[ -n ${HEROD:-} ]]; then B=$HEROD; return; fi
	B=$DIR/herod
	if [[ ${1:-} == build || ! -x $B ]]; then (cd "$here" && go build -o "$B" ./cmd/herod); fi
}

addr() { echo "127.0.0.$((BASE + $1 - 1))"; }

count() { local n=0; while [[ -d $DIR/node$((n + 1)) ]]; do n=$((n + 1)); done; echo $n; }

alive() { [[ -f $DIR/node$1/pid ]] && kill -0 "$(cat "$DIR/node$1/pid")" 2>/dev/null; }

# first live node's multiaddr, other than node $1
joinaddr() {
	local n; n=$(count)
	for ((j = 1; j <= n; j++)); do
		if [[ $j != "$1" ]] && alive "$j" && [[ -s $DIR/node$j/multiaddr ]]; then cat "$DIR/node$j/multiaddr"; return; fi
	done
}

startnode() {
	local i=$1 ip; ip=$(addr "$i")
	local d=$DIR/node$i
	mkdir -p "$d"
	local join; join=$(joinaddr "$i")
	# shellcheck disable=SC2086
	"$B" run --data "$d" --listen "$ip:4001" --gateway "$ip:5001" --replay-addr "$ip:5002" \
		--day "$DAY" ${join:+--join "$join"} $EXTRA >"$d/stdout" 2>"$d/log" &
	echo $! >"$d/pid"
	for _ in $(seq 100); do
		if grep -q "others join with" "$d/stdout" 2>/dev/null; then
			sed -n 's/.*others join with: --join //p' "$d/stdout" | tail -1 >"$d/multiaddr"
			echo "node$i: $ip:4001, gateway http://$ip:5001/ (pid $(cat "$d/pid"))"
			return
		fi
		alive "$i" || { echo "node$i exited:"; tail -5 "$d/log"; return 1; }
		sleep 0.2
	done
	echo "node$i did not start in 20 s; see $d/log"; return 1
}

case ${1:-} in
start)
	ensure build
	n=${2:-5}
	for ((i = 1; i <= n; i++)); do startnode "$i"; done ;;
add)
	ensure
	startnode $(($(count) + 1)) ;;
restart)
	ensure
	startnode "${2:?node number}" ;;
kill)
	i=${2:?node number}
	kill -9 "$(cat "$DIR/node$i/pid")" && echo "node$i killed" ;;
seed)
	shift
	ensure
	"$B" seed --node "http://$(addr 1):5001/" --data "$DIR/node1" "$@" ;;
status)
	ensure
	for ((i = 1; i <= $(count); i++)); do
		if alive "$i"; then
			echo "== node$i"
			"$B" status --node "http://$(addr "$i"):5001/" --data "$DIR/node$i" | sed -n '1,3p;/^ring:/,$p'
		else
			echo "== node$i: not running"
		fi
	done ;;
stop)
	for ((i = 1; i <= $(count); i++)); do
		if alive "$i"; then kill -TERM "$(cat "$DIR/node$i/pid")"; fi
	done
	for ((i = 1; i <= $(count); i++)); do
		for _ in $(seq 100); do alive "$i" || break; sleep 0.1; done
		rm -f "$DIR/node$i/pid"
	done
	echo "stopped; data kept in $DIR (rm -r it to start afresh)" ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
