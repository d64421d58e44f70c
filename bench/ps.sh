#!/usr/bin/env bash
# `inquest ps` with a warm host beside `ps aux`, interleaved on the same
# process set in the same run (bench/compare: A, B, A, B …; output to
# /dev/null), RUNS counted runs of each side after one warm-up. Prints the
# minimum, median and 90th percentile wall time of each side, the ratio of
# the medians and the median of the pair-by-pair ratios.
#
#   bash bench/ps.sh [RUNS]                          (default 30)
#   BASELINE=/path/to/older/inquest bash bench/ps.sh [RUNS]
#
# BASELINE adds that build's `inquest ps` as a side of its own (against
# `ps aux`, and this build against it), so a change is measured before and
# after in one run on the same host and the same processes. Both builds ask
# the same host, started here from this build with private runtime, config,
# state and data directories (killed at the end) and warmed by one call.
# Needs: go, ps (procps).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-30}
command -v ps >/dev/null || { echo "ps.sh: ps (procps) is required" >&2; exit 1; }
tmp=$(mktemp -d)
host_pid=
cleanup() {
	[ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

bin=$tmp/inquest
go build -o "$bin" ./cmd/inquest
go build -o "$tmp/compare" ./bench/compare
export XDG_RUNTIME_DIR=$tmp/run XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state XDG_DATA_HOME=$tmp/data
export INQUEST_DATA_DIR=$tmp/evidence
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
"$bin" serve >"$tmp/serve.log" 2>&1 &
host_pid=$!
for _ in $(seq 100); do "$bin" call get_status '{}' >/dev/null 2>&1 && break; sleep 0.1; done
"$bin" ps >/dev/null # the first CPU% waits for the host's second sample

echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "== processes: $(ps -e --no-headers | wc -l); inquest ps prints $("$bin" ps | wc -l) lines, ps aux $(ps aux | wc -l)"
T=$'\t'
{
	echo "inquest ps (warm host) vs ps aux${T}$bin ps${T}ps aux"
	if [ -n "${BASELINE:-}" ]; then
		echo "baseline inquest ps vs ps aux${T}$BASELINE ps${T}ps aux"
		echo "inquest ps vs baseline inquest ps${T}$bin ps${T}$BASELINE ps"
	fi
} >"$tmp/pairs.tsv"
"$tmp/compare" -n "$runs" "$tmp/pairs.tsv"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
