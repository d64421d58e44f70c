#!/usr/bin/env bash
# file_users benchmark (issue 4): inquest's host-wide fd scan beside
# `lsof -n -P` and a bare readlink walk of /proc/*/fd/*, measured in the
# same run while child processes hold 10,000 extra open fds on distinct
# files held by single-threaded python3 holders (bench/holder.py), so lsof
# lists each fd once. Targets: inquest >= 5x faster than lsof, within 2x of
# the bare walk.
#
#   bash bench/file_users.sh [-fds N] [-children N] [-runs N]
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v lsof >/dev/null 2>&1; then
	echo "installing lsof (Debian package lsof)" >&2
	if [ "$(id -u)" -eq 0 ]; then
		apt-get update -qq && apt-get install -y -qq lsof >/dev/null
	else
		sudo apt-get update -qq && sudo apt-get install -y -qq lsof >/dev/null
	fi
fi

# each child holds its share of the extra fds; leave headroom
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

echo "== interleaved whole-scan timings (bench/fileusers)"
go run ./bench/fileusers "$@"

echo
echo "== Go benchmarks (internal/capture), same machine, same run"
go test -run '^$' -bench 'FileUsers|BareWalk|Lsof' -benchtime 5x ./internal/capture/
