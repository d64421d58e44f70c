#!/usr/bin/env bash
# Capture benchmarks, each beside hyperfine (Debian package hyperfine)
# measuring the same commands in the same run, interleaved in 3 rounds:
#   1. direct provider's measured wall time of `true` vs hyperfine -N's
#      (added wall time = ours - hyperfine's median; target <= 5 ms), and
#      the whole request's cost per execution (including the /proc scan
#      that kills leftovers and the record writing);
#   2. an experiment of 2 cases x 30 blocks of `true` vs hyperfine's run of
#      the same two commands: both tools' estimates side by side.
# Usage: bench/capture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "hyperfine not found (apt-get install hyperfine)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/inquest" ./cmd/inquest
export INQUEST_DATA_DIR="$tmp/store"
cat > "$tmp/exp.json" <<'J'
{"cases":[{"name":"a","argv":["true"]},{"name":"b","argv":["true"]}],"blocks":30,"seed":1,"threshold":0.05}
J
for round in 1 2 3; do
  hyperfine -N --warmup 5 --runs 30 --export-json "$tmp/hf.json" true true >/dev/null 2>&1
  t0=$(date +%s%N)
  "$tmp/inquest" capture --provider direct --experiment "$tmp/exp.json" --json --cwd "$tmp" -- true > "$tmp/ours.json"
  t1=$(date +%s%N)
  python3 - "$tmp/hf.json" "$tmp/ours.json" "$t0" "$t1" "$round" <<'P'
import json, sys
hf = json.load(open(sys.argv[1]))["results"]
ours = json.load(open(sys.argv[2]))["data"]["summary"]
t0, t1, rnd = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
hmed = [r["median"] * 1e3 for r in hf]  # ms
omed = [c["median"] / 1e6 for c in ours["cases"]]
comp = ours["comparisons"][0]
print(f"round {rnd}")
print(f"  true wall median   hyperfine -N: {hmed[0]:.3f} ms   inquest direct: {omed[0]:.3f} ms   added: {omed[0]-hmed[0]:+.3f} ms (target <= 5 ms)")
print(f"  request cost per execution (inquest, incl. tree scan, records, analysis): {(t1-t0)/1e6/60:.3f} ms")
hd = (hf[1]["median"] - hf[0]["median"]) * 1e3
print(f"  b - a   hyperfine: median diff {hd:+.3f} ms (means {hf[0]['mean']*1e3:.3f} / {hf[1]['mean']*1e3:.3f} ms, stddev {hf[0]['stddev']*1e3:.3f} / {hf[1]['stddev']*1e3:.3f})")
print(f"          inquest:   {ours['estimand']} {comp['estimate']/1e6:+.3f} ms, 95% CI [{comp['ci_low']/1e6:+.3f}, {comp['ci_high']/1e6:+.3f}] ms over {comp['pairs']} pairs: {comp['classification']}")
P
done
