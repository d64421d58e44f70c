#!/usr/bin/env bash
# get_status round trip through the shared host (IPC over the unix socket,
# host in another process) beside the in-process host, 1,000 calls each,
# p50/p99 in microseconds. Two levels: tool registry in this process, and a
# full MCP tools/call through an `inquest mcp` process over stdio.
# The benchmark isolates its runtime/config/state dirs and kills its host.
# Usage: bench/ipc.sh [CALLS]
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-1000}
go test ./internal/cli -run XXX -bench BenchmarkGetStatusRoundTrip -benchtime "${calls}x" -count 1 |
  awk '/^Benchmark/ { printf "%-50s p50 %8s us   p99 %8s us\n", $1, $5, $7 } /^(ok|FAIL)/ { print }'
