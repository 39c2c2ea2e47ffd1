#!/usr/bin/env bash
# bench-disk.sh: issue 4's "bytes on disk per byte of HTML" in apparent
# size and in allocated blocks, on ext4 file systems with 4 KiB blocks (the
# mkfs default) and with 1 KiB blocks, each made fresh in a sparse file and
# loop-mounted for the run (needs root and loop devices), plus the
# system's temporary directory.
#
# Pages: the generated site's pages, and up to 500 real pages of 10-30 KB
# from HEROD_HTML_CORPUS (default /usr/share/doc; skipped if it has none).
#
# Usage: scripts/bench-disk.sh
set -euo pipefail

cd "$(dirname "$0")/.."
export HEROD_HTML_CORPUS=${HEROD_HTML_CORPUS:-/usr/share/doc}

run() { # label dir
	echo "== $1"
	TMPDIR="$2" GOTMPDIR="$2" go test -run - -bench BenchmarkDiskPerHTMLByte -benchtime 1x -count 1 ./archive |
		awk '/^BenchmarkDiskPerHTMLByte/ { sub("BenchmarkDiskPerHTMLByte/", "", $1); sub("-[0-9]+$", "", $1)
			for (i = 3; i < NF; i++) v[$(i+1)] = $i
			printf "  %-16s %6s bytes per HTML byte in files, %6s in allocated blocks (%s HTML bytes a page)\n", $1, v["disk/html"], v["alloc/html"], v["htmlbytes/page"] }'
}

run "system temporary directory ($(df --output=fstype "${TMPDIR:-/tmp}" | tail -1))" "${TMPDIR:-/tmp}"
if [ "$(id -u)" -ne 0 ]; then
	echo "bench-disk: not root: no loop-mounted file systems" >&2
	exit 0
fi
for bs in 4096 1024; do
	img=$(mktemp -t bench-disk.XXXXXX.img)
	mnt=$(mktemp -d -t bench-disk.XXXXXX)
	truncate -s 2G "$img"
	mkfs.ext4 -q -F -b "$bs" "$img"
	if mount -o loop "$img" "$mnt"; then
		run "fresh ext4, $bs-byte blocks" "$mnt"
		umount "$mnt"
	else
		echo "bench-disk: cannot loop-mount (no loop devices?)" >&2
	fi
	rmdir "$mnt"
	rm -f "$img"
done
