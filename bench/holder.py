#!/usr/bin/env python3
"""Single-threaded fd holder for the file_users benchmarks.

Usage: holder.py DIR N  -- creates N distinct files held-000000.dat ... in
DIR, keeps them all open, prints "ready" and sleeps until killed. One
thread, so `lsof` lists every fd once (a multi-threaded holder makes lsof
print each fd once per thread and inflates its work).
"""
import os
import signal
import sys

d, n = sys.argv[1], int(sys.argv[2])
files = [open(os.path.join(d, "held-%06d.dat" % i), "w") for i in range(n)]
print("ready", flush=True)
while True:
    signal.pause()
