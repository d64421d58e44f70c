#!/usr/bin/env bash
# Every speed pair of the project's targets, each inquest command beside its
# reference on the same input in the same run, interleaved (A, B, A, B …),
# RUNS counted runs each after one warm-up (bench/compare). Prints min and
# median wall time of both sides, the ratio of the medians, the median of
# the pair-by-pair ratios, the CPU ratio and median peak RSS. bench/README.md
# says what each pair measures and why it is fair.
#
#   bash bench/compare.sh [RUNS]       (default 5)
#   BIG_MB=0 bash bench/compare.sh     skip the >= 500 MB binary
#   ONLY='fuser|ps aux' bash bench/compare.sh   only the pairs whose name matches (grep -E)
#
# Needs: go, readelf/objdump (binutils), objcopy/strip (binutils), lsof, fuser
# (psmisc), ps (procps), python3. benchstat and the pprof binary are built
# from the Go module proxy into a cache directory on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
big_mb=${BIG_MB:-520}
repo=$PWD
cache=${INQUEST_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/inquest-bench}
mkdir -p "$cache"
tmp=$(mktemp -d)
holders=()
host_pid=
cleanup() {
	for p in "${holders[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

for t in readelf objdump objcopy strip lsof fuser ps python3; do
	command -v "$t" >/dev/null || { echo "compare.sh: $t is required" >&2; exit 1; }
done

echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
bin=$tmp/inquest
go build -o "$bin" ./cmd/inquest
go build -o "$tmp/compare" ./bench/compare
go build -o "$tmp/readlinks" ./bench/readlinks
# The floor of any Go command's start-up: a hello world built by the same
# toolchain (runtime, one package's init, one write).
mkdir -p "$tmp/hello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello, world") }\n' >"$tmp/hello/main.go"
printf 'module hello\n\ngo 1.22\n' >"$tmp/hello/go.mod"
(cd "$tmp/hello" && go build -o "$tmp/hello/hello" .)
# wants NAME: the pair NAME is selected (ONLY unset, or NAME matches it),
# so its inputs are worth building.
wants() { [ -z "${ONLY:-}" ] || printf '%s\n' "$1" | grep -Eq -- "$ONLY"; }
analyze=0
if wants "compare_benchmarks vs benchstat" || wants "summarize_profile vs pprof -top"; then analyze=1; fi
[ "$analyze" = 0 ] || [ -x "$cache/benchstat" ] || GOBIN=$cache go install golang.org/x/perf/cmd/benchstat@"$(go list -m -f '{{.Version}}' golang.org/x/perf)"
[ "$analyze" = 0 ] || [ -x "$cache/pprof" ] || GOBIN=$cache go install github.com/google/pprof@latest

# An isolated host (runtime/config/state/data dirs of its own), warm: started
# here, one call made before timing.
export XDG_RUNTIME_DIR=$tmp/run XDG_CONFIG_HOME=$tmp/config XDG_STATE_HOME=$tmp/state XDG_DATA_HOME=$tmp/data
export INQUEST_DATA_DIR=$tmp/evidence
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
"$bin" serve >"$tmp/serve.log" 2>&1 &
host_pid=$!
for _ in $(seq 100); do "$bin" call get_status '{}' >/dev/null 2>&1 && break; sleep 0.1; done
"$bin" ps >/dev/null

# bin inspect inputs: a small and a mid-size ELF, and a >= 500 MB stripped
# one (the go compile tool plus a section of random bytes) unless BIG_MB=0.
small=/usr/bin/ls
onemb=${ONE_MB:-/usr/bin/bash} # about 1.2 MB, in every Debian
libc=${LIBC:-/usr/lib/x86_64-linux-gnu/libc.so.6}
mid=$(go env GOTOOLDIR)/compile
big=
if [ "$big_mb" -gt 0 ] && wants "bin inspect ${big_mb} MB vs readelf -h -l -S -d -n"; then
	big=$tmp/big.elf
	head -c "${big_mb}M" /dev/urandom >"$tmp/pad.bin"
	objcopy --add-section .pad="$tmp/pad.bin" --set-section-flags .pad=noload,readonly "$mid" "$big"
	strip --strip-all "$big"
	rm -f "$tmp/pad.bin"
	cat "$big" >/dev/null # page cache warm for both sides
fi

# compare_benchmarks inputs: two -count 10 -benchmem runs of real packages
# (BENCH_PKGS, default strings and bytes: over 300 benchmarks), generated
# once into the cache by each package's test binary; the summarize_profile
# input is a CPU profile of the first package's benchmarks.
bench_pkgs=${BENCH_PKGS:-strings bytes}
key=$(echo "$bench_pkgs" | tr ' /' '__')
if [ "$analyze" = 1 ] && { [ ! -s "$cache/old-$key.txt" ] || [ ! -s "$cache/new-$key.txt" ] || [ ! -s "$cache/cpu-$key.prof" ]; }; then
	for f in old new; do : >"$cache/$f-$key.txt"; done
	for p in $bench_pkgs; do
		tb=$tmp/$(basename "$p").test
		go test -c -o "$tb" "$p"
		for f in old new; do
			(cd "$(go list -f '{{.Dir}}' "$p")" && "$tb" -test.run '^$' -test.bench . -test.benchmem -test.count 10 -test.benchtime 1x) >>"$cache/$f-$key.txt"
		done
		[ -s "$cache/cpu-$key.prof" ] || (cd "$(go list -f '{{.Dir}}' "$p")" && "$tb" -test.run '^$' -test.bench . -test.benchtime 20ms -test.cpuprofile "$cache/cpu-$key.prof" >/dev/null)
	done
fi
old=$cache/old-$key.txt new=$cache/new-$key.txt prof=$cache/cpu-$key.prof

# file_users input: two single-threaded holders (python3) with 5,000 fds
# each on distinct files, so lsof prints each fd once (no per-thread rows).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
for i in 0 1; do
	mkdir -p "$tmp/held/$i"
	python3 bench/holder.py "$tmp/held/$i" 5000 >"$tmp/held/ready-$i" 2>&1 &
	holders+=($!)
done
for i in 0 1; do
	for _ in $(seq 300); do grep -q ready "$tmp/held/ready-$i" && break; sleep 0.1; done
	grep -q ready "$tmp/held/ready-$i" || { echo "holder $i: $(cat "$tmp/held/ready-$i")" >&2; exit 1; }
done
held=$tmp/held/0/held-000000.dat
echo "== holders: pids ${holders[*]}, $(ls /proc/${holders[0]}/fd | wc -l) + $(ls /proc/${holders[1]}/fd | wc -l) fds, threads $(awk '/^Threads/ {print $2}' /proc/${holders[0]}/status) and $(awk '/^Threads/ {print $2}' /proc/${holders[1]}/status)"
echo "== inputs: $(stat -c '%n %s bytes' "$small" "$onemb" "$mid" "$libc" ${big:+"$big"} | paste -sd ';')"
[ "$analyze" = 0 ] || echo "== benchmarks ($bench_pkgs): $(grep -c '^Benchmark' "$old") rows per file, $(grep '^Benchmark' "$old" | awk '{print $1}' | sort -u | wc -l) distinct; profile $(stat -c %s "$prof") bytes"

T=$'\t'
# readelf with the detail `bin inspect` prints (file header, program and
# section headers, dynamic section, notes), not -a, which also prints
# every symbol and relocation.
re="readelf -h -l -S -d -n -W"
cat >"$tmp/pairs.tsv" <<PAIRS
inquest --help vs ps aux${T}$bin --help${T}ps aux
inquest --help vs Go hello world${T}$bin --help${T}$tmp/hello/hello
inquest ps (warm host) vs ps aux${T}$bin ps${T}ps aux
in-process get_status vs inquest --help${T}INQUEST_IN_PROCESS=1 $bin call get_status {}${T}$bin --help
inquest version vs Go hello world${T}$bin version${T}$tmp/hello/hello
Go hello world vs readelf -h -l -S -d -n bash${T}$tmp/hello/hello${T}$re $onemb
bin inspect ls vs Go hello world${T}$bin bin inspect $small${T}$tmp/hello/hello
bin inspect ls vs readelf -h -l -S -d -n${T}$bin bin inspect $small${T}$re $small
bin inspect bash (1 MB) vs readelf -h -l -S -d -n${T}$bin bin inspect $onemb${T}$re $onemb
bin inspect compile vs readelf -h -l -S -d -n${T}$bin bin inspect $mid${T}$re $mid
${big:+bin inspect ${big_mb} MB vs readelf -h -l -S -d -n${T}$bin bin inspect $big${T}$re $big}
bin disasm libc .text (CLI pages of 5000) vs objdump -d${T}bash bench/disasm_pages.sh $bin $libc 5000${T}objdump -d -w -j .text $libc
compare_benchmarks vs benchstat${T}$bin analyze compare_benchmarks $old $new${T}$cache/benchstat $old $new
summarize_profile vs pprof -top${T}$bin analyze summarize_profile $prof${T}$cache/pprof -top -symbolize=none $prof
inquest fuser vs lsof -n -P PATH${T}$bin fuser $held${T}lsof -n -P $held
inquest fuser vs fuser (psmisc)${T}$bin fuser $held${T}fuser $held
inquest fuser vs bare walk, all uses${T}$bin fuser $held${T}$tmp/readlinks $held
inquest fuser vs bare walk, fds only${T}$bin fuser $held${T}$tmp/readlinks -fds-only $held
PAIRS
if [ -n "${ONLY:-}" ]; then
	awk -F'\t' -v re="$ONLY" '$1 ~ re' "$tmp/pairs.tsv" >"$tmp/only.tsv"
	mv "$tmp/only.tsv" "$tmp/pairs.tsv"
fi
"$tmp/compare" -n "$runs" "$tmp/pairs.tsv"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
