#!/usr/bin/env bash
# Recording benchmarks (internal/recording, all in one run):
#  - write cost of one frame of 1,000 tracked processes (encode + write);
#  - file bytes per process-sample beside the in-memory history codec's exact
#    encoded bytes for the same samples (synthetic workload of 200 processes
#    over 600 s, and real snapshots of this machine taken 100 ms apart);
#  - open time and peak RSS of a generated 24 h, 1 s recording of 50
#    processes, loaded in a fresh child process per iteration;
#    the file (about 70 MB) is written to a temporary directory and removed.
# Targets: open <= 2 s, peak RSS <= 3x the file size, bytes per
# process-sample <= 2x the history codec's.
# Usage: bench/recording.sh [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}
go test ./internal/recording -run '^$' -bench 'WriteFrame1000' -benchtime 2000x -count "$count"
go test ./internal/recording -run '^$' -bench 'BytesPerSample' -benchtime 1x -count 1
go test ./internal/recording -run '^$' -bench 'OpenDay' -benchtime 1x -count "$count" -timeout 30m
