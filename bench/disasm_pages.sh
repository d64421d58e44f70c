#!/usr/bin/env bash
# Disassembles FILE's .text three ways and objdump the same section, in
# the same run, interleaved (the order rotates every round), and prints
# each side's wall and CPU time (min and median) and its ratio to objdump:
#   objdump   objdump -d -w -j .text FILE
#   all       inquest bin disasm FILE --section .text --all   (one process)
#   mcp       inquest mcp --toolsets bin, one client paging disassemble
#             (max_instructions MAX) by next_cursor to the end over stdio
#   pages     (PAGES=1 only) the CLI one process per page: --max MAX, then
#             --cursor from the "more rows" line until no page is left
#   mcp-old   (OLD=INQUEST2 only) the mcp side run with another build, e.g.
#             the one before a change
# Output goes to /dev/null. CPU is the child's user+system time (the MCP
# client's own JSON parsing is in its wall time, not its CPU). A first
# untimed pass checks equal work: the instruction count of every side.
# The load average is printed before and after.
# Usage: bench/disasm_pages.sh INQUEST FILE [ROUNDS] [MAX]  (ROUNDS 3, MAX 5000)
set -euo pipefail
bin=$1 file=$2 rounds=${3:-3} max=${4:-5000}
exec python3 - "$bin" "$file" "$rounds" "$max" "${PAGES:-0}" "${OLD:-}" <<'PY'
import functools, json, os, re, statistics, subprocess, sys, time

inq, path, rounds, maxn, pages, old = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6]
null = open(os.devnull, "wb")

def run(argv, stdout=null):
    """Runs argv; returns (wall s, child CPU s, stdout bytes or None)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    out = p.stdout.read() if stdout == subprocess.PIPE else None
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{argv[:3]} exited {p.returncode}: {err[-500:]!r}")
    return wall, ru.ru_utime + ru.ru_stime, out, err

def objdump(count=False):
    w, c, out, _ = run(["objdump", "-d", "-w", "-j", ".text", path], subprocess.PIPE if count else null)
    n = len(re.findall(rb"(?m)^ +[0-9a-f]+:\t", out)) if count else None
    return w, c, n

def cli_all(count=False):
    w, c, out, _ = run([inq, "bin", "disasm", path, "--section", ".text", "--all"], subprocess.PIPE if count else null)
    # Instruction lines only: the symbol headers ("0000... <main>:") and
    # the blank lines before them are objdump's shape, not rows.
    return w, c, (len(re.findall(rb"(?m)^0x[0-9a-f]+:\t", out)) if count else None)

def cli_pages(count=False):
    wall = cpu = 0.0
    n, cursor = 0, []
    while True:
        w, c, out, err = run([inq, "bin", "disasm", path, "--section", ".text", "--max", str(maxn)] + cursor, subprocess.PIPE if count else null)
        wall, cpu = wall + w, cpu + c
        if count:
            n += out.count(b"\n")
        m = re.search(rb"more rows: repeat with --cursor (\S+)", err)
        if not m:
            return wall, cpu, (n if count else None)
        cursor = ["--cursor", m.group(1).decode()]

def mcp(count=False, inq=inq):
    t0 = time.perf_counter()
    p = subprocess.Popen([inq, "mcp", "--toolsets", "bin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=null)
    def send(obj):
        p.stdin.write(json.dumps(obj).encode() + b"\n"); p.stdin.flush()
    def reply(id):
        while True:
            line = p.stdout.readline()
            if not line:
                sys.exit("the MCP server closed its output")
            msg = json.loads(line)
            if msg.get("id") == id:
                return msg
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    reply(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    args = {"path": path, "section": ".text", "max_instructions": maxn}
    n, id = 0, 2
    while True:
        send({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "disassemble", "arguments": args}})
        msg = reply(id)
        res = msg.get("result") or {}
        if res.get("isError") or "error" in msg:
            sys.exit(f"disassemble failed: {json.dumps(msg)[:500]}")
        data = res["structuredContent"]["data"]
        n += len(data["rows"])
        id += 1
        if not data.get("next_cursor"):
            break
        args["cursor"] = data["next_cursor"]
    p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, n

sides = {"objdump": objdump, "all": cli_all, "mcp": mcp}
if pages:
    sides["pages"] = cli_pages
if old:
    sides["mcp-old"] = functools.partial(mcp, inq=old)
print("load average before:", open("/proc/loadavg").read().strip())
counts = {k: f(True)[2] for k, f in sides.items()}
print("instructions:", ", ".join(f"{k} {v}" for k, v in counts.items()))
if len(set(counts.values())) != 1:
    sys.exit("the sides listed different instruction counts: not equal work")
times = {k: ([], []) for k in sides}
names = list(sides)
for r in range(rounds):
    order = names[r % len(names):] + names[:r % len(names)]
    for k in order:
        w, c, _ = sides[k]()
        times[k][0].append(w); times[k][1].append(c)
ow, oc = times["objdump"]
for k in names:
    w, c = times[k]
    line = f"{k:8} wall min {min(w):6.2f} s median {statistics.median(w):6.2f} s   cpu min {min(c):6.2f} s median {statistics.median(c):6.2f} s"
    if k != "objdump":
        line += f"   /objdump wall min {min(w)/min(ow):.2f} median {statistics.median(w)/statistics.median(ow):.2f}, cpu min {min(c)/min(oc):.2f} median {statistics.median(c)/statistics.median(oc):.2f}"
    print(line)
print("load average after:", open("/proc/loadavg").read().strip())
PY
