#!/usr/bin/env bash
# Times `inquest bin inspect FILE` (the inspect_binary tool through the CLI,
# its table, a whole process) against `readelf -h -l -S -d -n -W FILE` (the
# same detail: file header, program and section headers, dynamic section,
# notes; not -a, which also prints every symbol and relocation) on the same
# file in the same run, then against a Go hello world built by the same
# toolchain (the floor of any Go command's start-up), with bench/compare
# (A, B, A, B ... and the A/B ratio pair by pair).
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/inquest
go build -o "$bin" ./cmd/inquest
go build -o "$tmp/compare" ./bench/compare
mkdir -p "$tmp/hello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello, world") }\n' >"$tmp/hello/main.go"
printf 'module hello\n\ngo 1.22\n' >"$tmp/hello/go.mod"
(cd "$tmp/hello" && go build -o "$tmp/hello/hello" .)
echo "file: $file ($(stat -c %s "$file") bytes); load average $(cut -d' ' -f1-3 /proc/loadavg)"
# Warm the page cache for both.
cat "$file" >/dev/null
export INQUEST_DATA_DIR=$tmp/evidence
printf 'bin inspect vs readelf -h -l -S -d -n -W\t%s bin inspect %s\treadelf -h -l -S -d -n -W %s\n' "$bin" "$file" "$file" >"$tmp/pairs.tsv"
printf 'bin inspect vs Go hello world\t%s bin inspect %s\t%s\n' "$bin" "$file" "$tmp/hello/hello" >>"$tmp/pairs.tsv"
"$tmp/compare" -n "$runs" "$tmp/pairs.tsv"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "in-process figures: go test ./internal/cli -run '^\$' -bench BenchmarkBinInspectJSON"
