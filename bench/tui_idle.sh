#!/usr/bin/env bash
# Idle CPU of the TUI host beside htop, measured the same way in the same run.
#
# Each side runs alone in a detached tmux session of 120x40 (a real
# terminal: both draw to it), is left to settle for WARM seconds, then its
# CPU time (utime + stime of /proc/PID/stat, its threads included) is read
# at the start and the end of SECONDS_IDLE seconds of wall time. The figure
# is that CPU time over the wall time, in percent of one core. The sides
# alternate (inquest, htop, inquest, htop ...) ROUNDS times so that a
# machine that gets busier or quieter during the run affects both; the
# median of each side is printed.
#
# inquest runs as the TUI host (no other host for the user: private
# XDG_RUNTIME_DIR/CONFIG/STATE/DATA), sampling every process once a second
# as it always does; htop runs with its default 1.5 s refresh (-d 15) and
# with -d 10 (1 s, the same cadence as inquest).
#
# The ratios inquest/htop (and, with BASELINE, baseline/htop and
# inquest/baseline) are taken per round, sides of the same round, and
# printed as their min and median over the rounds.
#
# Usage: bench/tui_idle.sh [SECONDS_IDLE] [ROUNDS]   (defaults 60 and 1)
# BASELINE=/path/to/other/inquest adds that build as a fourth side (for
# example one built from main, to compare a change).
# Target: inquest under 2% of one core, and at most htop -d 10 (ratio <= 1).
set -euo pipefail
cd "$(dirname "$0")/.."
idle=${1:-60}
rounds=${2:-1}
warm=${WARM:-5}
command -v tmux >/dev/null || { echo "needs tmux (apt-get install -y tmux)" >&2; exit 2; }
command -v htop >/dev/null || { echo "needs htop (apt-get install -y htop)" >&2; exit 2; }

work=$(mktemp -d)
sock="$work/tmux.sock"
cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/inquest" ./cmd/inquest
hz=$(getconf CLK_TCK)

# cpu_ticks PID: utime + stime of the process (all its threads), in ticks.
cpu_ticks() {
	# The command name (field 2) may hold spaces: cut after the last ')'.
	local rest
	rest=$(sed 's/.*) //' "/proc/$1/stat")
	# after "pid (comm) ", field 1 is state; utime and stime are fields 12, 13
	awk '{print $12 + $13}' <<<"$rest"
}

# measure NAME CMD...: prints the percent of one core CMD used while idle.
measure() {
	local name=$1
	shift
	for d in run config state data tmp; do mkdir -p "$work/$name/$d"; done
	tmux -S "$sock" new-session -d -s "$name" -x 120 -y 40 \
		env -u TMUX TERM=xterm-256color \
		XDG_RUNTIME_DIR="$work/$name/run" XDG_CONFIG_HOME="$work/$name/config" \
		XDG_STATE_HOME="$work/$name/state" XDG_DATA_HOME="$work/$name/data" \
		TMPDIR="$work/$name/tmp" "$@"
	local pid
	pid=$(tmux -S "$sock" list-panes -t "$name" -F '#{pane_pid}')
	# env execs the program: the pane's process is the program itself.
	sleep "$warm"
	local t0 t1 w0 w1
	t0=$(cpu_ticks "$pid")
	w0=$(date +%s.%N)
	sleep "$idle"
	t1=$(cpu_ticks "$pid")
	w1=$(date +%s.%N)
	tmux -S "$sock" kill-session -t "$name"
	awk -v a="$t0" -v b="$t1" -v hz="$hz" -v w0="$w0" -v w1="$w1" 'BEGIN{printf "%.2f\n", (b-a)/hz/(w1-w0)*100}'
}

median() { sort -n | awk '{a[NR]=$1} END{if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

echo "cores $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg); ${idle}s idle per measure, ${rounds} round(s), 120x40 tmux"
: >"$work/inquest.txt"
: >"$work/htop15.txt"
: >"$work/htop10.txt"
: >"$work/base.txt"
for ((r = 0; r < rounds; r++)); do
	measure "inquest$r" "$work/inquest" >>"$work/inquest.txt"
	measure "htop15-$r" htop -d 15 >>"$work/htop15.txt"
	measure "htop10-$r" htop -d 10 >>"$work/htop10.txt"
	if [ -n "${BASELINE:-}" ]; then measure "base$r" "$BASELINE" >>"$work/base.txt"; fi
done
printf '%-34s %s\n' "side" "idle CPU, % of one core (median)"
printf '%-34s %s   [%s]\n' "inquest (TUI host, 1 s sampling)" "$(median <"$work/inquest.txt")" "$(paste -sd' ' "$work/inquest.txt")"
printf '%-34s %s   [%s]\n' "htop -d 15 (default 1.5 s)" "$(median <"$work/htop15.txt")" "$(paste -sd' ' "$work/htop15.txt")"
printf '%-34s %s   [%s]\n' "htop -d 10 (1 s)" "$(median <"$work/htop10.txt")" "$(paste -sd' ' "$work/htop10.txt")"
if [ -n "${BASELINE:-}" ]; then
	printf '%-34s %s   [%s]\n' "baseline ($BASELINE)" "$(median <"$work/base.txt")" "$(paste -sd' ' "$work/base.txt")"
fi
# ratios A/B of the same round (the sides of one round ran next to each
# other): min and median over the rounds.
ratios() {
	paste "$1" "$2" | awk '$2 > 0 {printf "%.2f\n", $1 / $2}' >"$work/ratio.txt"
	printf '%-34s min %s  median %s   [%s]\n' "$3" "$(sort -n "$work/ratio.txt" | head -1)" "$(median <"$work/ratio.txt")" "$(paste -sd' ' "$work/ratio.txt")"
}
ratios "$work/inquest.txt" "$work/htop10.txt" "ratio inquest / htop -d 10"
ratios "$work/inquest.txt" "$work/htop15.txt" "ratio inquest / htop -d 15"
if [ -n "${BASELINE:-}" ]; then
	ratios "$work/base.txt" "$work/htop10.txt" "ratio baseline / htop -d 10"
	ratios "$work/inquest.txt" "$work/base.txt" "ratio inquest / baseline"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
