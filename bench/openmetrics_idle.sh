#!/usr/bin/env bash
# Idle CPU of the headless host (`inquest serve`) with its Prometheus
# exporter off and on (listening, nobody scraping), measured the same way
# in the same run, and the exporter's answer checked once per "on" side.
#
# Each side runs `inquest serve` alone with private XDG directories (no
# other host for the user), sampling every process once a second as it
# always does, is left to settle for WARM seconds, then its CPU time
# (utime + stime of /proc/PID/stat, threads included) is read at the start
# and the end of SECONDS_IDLE seconds of wall time: that CPU time over the
# wall time, in percent of one core. The sides alternate (off, on, off,
# on ...) ROUNDS times so a machine that gets busier or quieter affects
# both; the median of each side is printed.
#
# Usage: bench/openmetrics_idle.sh [SECONDS_IDLE] [ROUNDS]   (defaults 60 and 1)
# Target: the host with the exporter on stays under the idle target of
# 2% of one core (bench/tui_idle.sh), and within noise of the exporter off.
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${1:-60}
rounds=${2:-1}
warm=${WARM:-5}
port=${PORT:-19935}
work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/inquest" ./cmd/inquest
hz=$(getconf CLK_TCK)

cpu_ticks() {
	local rest
	rest=$(sed 's/.*) //' "/proc/$1/stat")
	awk '{print $12 + $13}' <<<"$rest"
}

# measure NAME LISTEN: prints the percent of one core the host used while idle.
measure() {
	local name=$1 listen=$2 d=$work/$1
	rm -rf "$d"
	for s in run config/inquest state data tmp; do mkdir -p "$d/$s"; done
	chmod 700 "$d/run"
	if [ -n "$listen" ]; then
		printf '[settings]\nopenmetrics_listen = "%s"\n' "$listen" >"$d/config/inquest/inquest.toml"
	fi
	XDG_RUNTIME_DIR="$d/run" XDG_CONFIG_HOME="$d/config" XDG_STATE_HOME="$d/state" \
		XDG_DATA_HOME="$d/data" TMPDIR="$d/tmp" "$work/inquest" serve 2>"$d/serve.log" &
	pid=$!
	sleep "$warm"
	if [ -n "$listen" ]; then
		curl -fsS "http://$listen/metrics" | grep -q '^inquest_exporter_series ' ||
			{ echo "the exporter did not answer on $listen" >&2; cat "$d/serve.log" >&2; exit 1; }
		sleep 1
	fi
	local t0 t1 w0 w1
	t0=$(cpu_ticks "$pid")
	w0=$(date +%s.%N)
	sleep "$idle"
	t1=$(cpu_ticks "$pid")
	w1=$(date +%s.%N)
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	awk -v a="$t0" -v b="$t1" -v hz="$hz" -v w0="$w0" -v w1="$w1" 'BEGIN{printf "%.2f\n", (b-a)/hz/(w1-w0)*100}'
}

median() { sort -n | awk '{a[NR]=$1} END{if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

echo "cores $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg); ${idle}s idle per measure, ${rounds} round(s)"
: >"$work/off.txt"
: >"$work/on.txt"
for ((r = 0; r < rounds; r++)); do
	measure off "" >>"$work/off.txt"
	measure on "127.0.0.1:$port" >>"$work/on.txt"
done
printf '%-34s %8s\n' "side" "cpu %"
printf '%-34s %8s\n' "inquest serve, exporter off" "$(median <"$work/off.txt")"
printf '%-34s %8s\n' "inquest serve, exporter on (idle)" "$(median <"$work/on.txt")"
echo "target: exporter on under 2% of one core"
