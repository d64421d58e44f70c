#!/usr/bin/env bash
# Times `inquest bin inspect --json FILE` (the inspect_binary tool through
# the CLI, a whole process) against `readelf -a -W FILE` on the same file in
# the same run with farm-bench (pairs A/B runs and prints the A/B ratio).
# FILE defaults to the largest ELF among the go tool and /usr/bin.
# Usage: bench/bin_inspect.sh [FILE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-}
runs=${2:-10}
if [ -z "$file" ]; then
  file=$(ls -S $(go env GOROOT)/bin/go /usr/bin/* 2>/dev/null | while read -r f; do
    [ -f "$f" ] && head -c4 "$f" 2>/dev/null | grep -q "ELF" && { echo "$f"; break; }; done)
fi
bin=$(mktemp -d)/inquest
go build -o "$bin" ./cmd/inquest
echo "file: $file ($(stat -c %s "$file") bytes)"
# Warm the page cache for both.
cat "$file" >/dev/null
export INQUEST_DATA_DIR=$(mktemp -d)
farm-bench -n "$runs" --warmup 2 --timeout 600 --vs "readelf -a -W $file" -- "$bin" bin inspect --json "$file"
echo "in-process figures: go test ./internal/bin -run XXX -bench BenchmarkInspectBinary -benchtime 5x"
