#!/usr/bin/env bash
# Benchmarks of the perf toolset, each printed beside its reference measured
# in the same run:
#   - summarize_profile vs the go tool pprof binary's -top on the same
#     generated 100,000-sample CPU profile (metric "ratio" = ours / pprof;
#     target <= 0.5);
#   - query_evidence over 100,000 manifests (p50_ms; target < 20 ms);
#   - inspect_trace_window on a generated 1.5-million-event Chrome trace
#     vs speedscope and DevTools' trace engine on the same file (wall
#     seconds and peak RSS of each process; needs node and npm; speedscope
#     takes minutes).
# Usage: bench/perf.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
go test ./internal/perf/ -run '^$' -bench 'SummarizeProfileVsPprofTop' -benchtime 3x "$@"
go test ./internal/perf/ -run '^$' -bench 'QueryEvidence100k' -benchtime 600x "$@"
go test ./internal/perf/ -run '^$' -bench 'TraceWindow1_5M' -benchtime 1x -timeout 60m "$@"
