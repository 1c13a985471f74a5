#!/usr/bin/env python3
"""8 callers with nginx and the client on one CPU: what each client costs,
and how the kernel schedules it (BENCHMARKS.md, issue 15, eleventh pass).
With --unpinned, the same programs with nginx and the client free to use
every CPU, and ours also on the transport's executor.

Not part of `make bench`. Needs the programs `make bench` builds (run it, or
bench.py, once) and a C compiler; with `perf` it also counts, per program,
the share of requests sent on its busiest connection.

    python3 Benchmarks/experiments/one-cpu-table.py [--requests N] [--rounds R] [--unpinned]

Each round runs every program once, interleaved, pinned with nginx to one
CPU (unless --unpinned), and reads its CPU time and context switches from wait4(2), and nginx's
CPU time from /proc; the table shows medians.
"""
import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import bench  # noqa: E402  (Benchmarks/bench.py: the server and the built programs)


def run(name, command):
    """Runs `command`; returns its JSON line and its rusage (all its threads)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"{name} ({' '.join(command)}) exited with wait status {status}")
    return json.loads(output.strip().splitlines()[-1]), usage


def server_cpu_seconds(server):
    """The CPU time nginx's master and workers have used so far."""
    nanoseconds = 0
    for thread in server.pids():
        # The first field: time on a CPU, in nanoseconds (clock ticks are too coarse).
        with open(f"/proc/{thread}/schedstat") as schedstat:
            nanoseconds += int(schedstat.read().split()[0])
    return nanoseconds / 1e9


def busiest_connection_share(command, requests, scratch):
    """The share of the requests sent on the connection that carried the most, from `perf`."""
    data = os.path.join(scratch, "perf.data")
    probes = "syscalls:sys_enter_sendto,syscalls:sys_enter_write"
    recorded = subprocess.run(["perf", "record", "-q", "-e", probes, "-o", data, "--"] + command,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if recorded.returncode != 0:
        return None  # No tracepoints for this user, say: the column shows "–".
    script = subprocess.run(["perf", "script", "-i", data, "-F", "trace"], capture_output=True, text=True).stdout
    per_fd = collections.Counter(re.findall(r"fd: (0x[0-9a-f]+)", script))
    # Writes to anything but the connections (the logs, a pipe) are a handful.
    sends = [count for count in per_fd.values() if count >= requests // 1000]
    return max(sends) / sum(sends) if sends else None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cpu", type=int, default=min(os.sched_getaffinity(0)))
    parser.add_argument("--unpinned", action="store_true", help="leave nginx and the client on every CPU")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="one-cpu-")
    pingpong = os.path.join(scratch, "one-cpu-pingpong")
    subprocess.run(["cc", "-O2", "-o", pingpong, os.path.join(HERE, "one-cpu-pingpong.c")], check=True)
    server = bench.Nginx()
    server.start()
    n = str(args.requests)
    try:
        if not args.unpinned:
            server.set_cpus({args.cpu})
        url = server.base_url
        port = url.rsplit(":", 1)[1]
        programs = {
            "raw libcurl (C)": [bench.BASELINE, "concurrent", url, n, "8"],
            "swift-oauth2": [bench.BENCH, "concurrent", "--url", url, "--requests", n, "--concurrency", "8"],
            "swift-oauth2 on the transport's executor":
                [bench.BENCH, "concurrent", "--url", url, "--requests", n, "--concurrency", "8", "--executor", "transport"],
            "hand-off floor": [bench.FLOOR, "concurrent", url, n, "8"],
            "Go x/oauth2": [bench.GO_BENCH, "concurrent", url, n, "8"],
            "one-cpu-pingpong, no work": [pingpong, port, n, "8", "0", "0"],
            "one-cpu-pingpong, 12 µs of work per answer": [pingpong, port, n, "8", "0", "12000"],
            "the same, answers read before sends": [pingpong, port, n, "8", "1", "12000"],
            "the same, libcurl's order, writes corked until the turn ends": [pingpong, port, n, "8", "2", "12000"],
        }
        pin = [] if args.unpinned else ["taskset", "-c", str(args.cpu)]
        rows = collections.defaultdict(list)
        for _ in range(args.rounds):
            for name, command in programs.items():
                server_before = server_cpu_seconds(server)
                result, usage = run(name, pin + command)
                server_seconds = server_cpu_seconds(server) - server_before
                rows[name].append((
                    result["requests_per_second"],
                    (usage.ru_utime + usage.ru_stime) * 1e6 / args.requests,
                    usage.ru_nvcsw / args.requests,
                    usage.ru_nivcsw / args.requests,
                    server_seconds * 1e6 / args.requests,
                ))
        shares = {}
        if shutil.which("perf"):
            for name, command in programs.items():
                shares[name] = busiest_connection_share(pin + command, args.requests, scratch)
    finally:
        if not args.unpinned:
            server.set_cpus(set(range(os.cpu_count())))
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    placement = "free to use every CPU" if args.unpinned else f"on CPU {args.cpu}"
    print(f"8 callers (connections), nginx and the client {placement}; {args.requests} requests, "
          f"medians of {args.rounds} interleaved rounds")
    print()
    print("| client | req/s | CPU µs/req | sleeps/req | preemptions/req | nginx CPU µs/req | requests on the busiest connection |")
    print("|---|---|---|---|---|---|---|")
    for name, values in rows.items():
        def median(i):
            return statistics.median(value[i] for value in values)
        share = shares.get(name)
        share_text = f"{share * 100:.0f}%" if share is not None else "–"
        print(f"| {name} | {median(0):,.0f} | {median(1):.1f} | {median(2):.2f} | {median(3):.2f} | {median(4):.1f} "
              f"| {share_text} |")


if __name__ == "__main__":
    main()
