#!/usr/bin/env python3
"""Runs the benchmarks: `make bench` calls this.

Installs what is missing (nginx-light, libcurl's headers), builds the
benchmark in release mode and the C baseline, starts nginx on a free port of
127.0.0.1, runs the libcurl baseline and swift-oauth2 interleaved (A B, A B,
... for every scenario in every round), stops nginx, and prints a table of
each of our results as a ratio to the baseline of the same round, with
medians and ranges. Times are never judged: only the refresh storm's token
count (it must be 1) and errors (non-200 answers) fail the run.

Beside them, in the same rounds, a Go program on golang.org/x/oauth2 (Benchmarks/go,
built offline in GOPATH mode against Debian's golang-golang-x-oauth2-dev) runs
the request scenarios, unpinned and with nginx and every client on one CPU
(`taskset`); the start row (one token, one GET, exit; wall time and peak RSS of
the process) runs the three programs and the command-line tool's
`oauth2 token --print-access-token` on a stored token; and the per-account row
(`oauth2-bench accounts`) reports bytes per account and the time to send as
accounts grow to 10,000.

It also starts a throwaway PostgreSQL cluster (scripts/postgres.sh --name
bench, stopped at the end) for the token store rows: sequential signed
requests with the file store and with the PostgreSQL store, and the refresh
storm across processes (--storm-processes processes, each with its own
client, on one store), which must also make exactly one token request.

Two views of the request rows. In process (the tables above): each program
times its own requests from the first GET to the last answer, start-up and
exit left out. Whole process: `user-bench` (Sources/user-bench, a program
written against the public API only, as a user would write it) beside the C
baseline and the Go program given the same arguments, each timed from exec to
exit by hyperfine (start-up, the token, the requests, the exit), the three
taking turns in every round. Each row says whether ours leads Go, trails it or
is level with it: leads or trails only when ours/Go is below or above 1 in
every round, else level, whatever the medians say.

`--base REV` adds a revision of this repository, built from `git archive` in
/tmp (kept there, so the next run with the same REV builds incrementally), its
own Benchmarks/ against its own library: its oauth2-bench runs the request
rows right after ours in every round, its user-bench (from the revision that
added it on) the whole-process rows, and a table compares the two
revisions row by row. `--only requests` runs the request rows alone (no
stores, no linked-in runtime, no start, storm or in-process rows);
`--only whole-process` runs the whole-process rows alone; `--only dpop` the
DPoP rows alone (one proof's cost, in process, no network).

    Benchmarks/bench.py [--requests N] [--rounds R] [--memory-requests N]
                        [--storm-processes P] [--storm-callers C] [--leaks]
                        [--start-runs N] [--cli auto|none|PATH] [--pin-cpu CPU]
                        [--base REV] [--only requests|whole-process|dpop]
                        [--whole-process-runs N]

`--leaks` instead runs the leak checks: valgrind memcheck on a short run of
the release binary, and an AddressSanitizer (LeakSanitizer) build.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(HERE, ".build")
BENCH = os.path.join(BUILD, "release", "oauth2-bench")
# The start row's Swift program: OAuth2 alone (oauth2-bench also links PostgresNIO).
START = os.path.join(BUILD, "release", "oauth2-start")
# The same program with the Swift runtime linked in (`--static-swift-stdlib`), as a program that
# starts often is best shipped; built in a scratch folder of its own.
START_STATIC_SCRATCH = os.path.join(HERE, ".build-static")
START_STATIC = os.path.join(START_STATIC_SCRATCH, "release", "oauth2-start")
# The start-up floor: the hand-off floor (below) built the same way, started for one token and one
# GET. A Swift program with the runtime linked in that does what the C baseline does, handing
# its GET to a thread from an async main, and nothing of OAuth2.
START_FLOOR_STATIC = os.path.join(START_STATIC_SCRATCH, "release", "handoff-floor")
# The request benchmark and the hand-off floor with the Swift runtime linked in, as
# server images are usually built (`swift build --static-swift-stdlib`): the request rows
# run them too. With the runtime shared, every thread-local the runtime reads (the current
# task, on each async frame's allocation; the exclusivity checks' access set) is a call to
# `__tls_get_addr`; linked in, it is one instruction.
BENCH_STATIC = os.path.join(START_STATIC_SCRATCH, "release", "oauth2-bench")
FLOOR_STATIC = START_FLOOR_STATIC
BASELINE = os.path.join(BUILD, "curl-baseline")
# The benchmark a user would write (Sources/user-bench): the whole-process rows.
USER_BENCH = os.path.join(BUILD, "release", "user-bench")
GO_BENCH = os.path.join(BUILD, "go-oauth2-bench")
# The hand-off floor: Swift callers on the default executor handing raw libcurl
# transfers to a thread of their own, and nothing else (Sources/handoff-floor).
FLOOR = os.path.join(BUILD, "release", "handoff-floor")
GO_SOURCE = os.path.join(HERE, "go", "oauth2_bench.go")
# Debian's golang-*-dev packages put their sources here: GOPATH mode finds
# golang.org/x/oauth2 there without a module proxy.
DEBIAN_GOPATH = "/usr/share/gocode"
CLI_SCRATCH = os.path.join(ROOT, ".build", "cli-static")
CLI_RELEASE = os.path.join(CLI_SCRATCH, "release", "oauth2")
ASAN_SCRATCH = os.path.join(HERE, ".build-asan")
ACCESS_TOKEN = "bench-access-token-6f2c1a9e4b7d"


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(command, **kwargs):
    log("+ " + " ".join(command))
    subprocess.run(command, check=True, **kwargs)


# MARK: - Setup


def ensure_dependencies():
    """libcurl's headers, python3 and a C compiler through the project's script; here nginx-light,
    Go with golang.org/x/oauth2 (Debian's packages, for GOPATH mode), GNU time (the start row's peak RSS)
    and hyperfine (the whole-process rows)."""
    run([os.path.join(ROOT, "scripts", "ensure-deps.sh"), "gcc"])
    missing = []
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        missing.append("nginx-light")
    if shutil.which("go") is None:
        missing.append("golang-go")
    if not os.path.isdir(os.path.join(DEBIAN_GOPATH, "src", "golang.org", "x", "oauth2", "clientcredentials")):
        missing.append("golang-golang-x-oauth2-dev")
    if not os.path.exists("/usr/bin/time"):
        missing.append("time")
    if shutil.which("hyperfine") is None:
        missing.append("hyperfine")
    if missing:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(sudo + ["apt-get", "update", "-qq"], env=env)
        run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing, env=env)


def nginx_binary():
    return shutil.which("nginx") or "/usr/sbin/nginx"


def build(swift_flags=(), scratch=None, only=None):
    """Benchmarks/ in release; with `only`, the products that part of the run needs."""
    command = ["swift", "build", "-c", "release", "--package-path", HERE]
    if scratch:
        command += ["--scratch-path", scratch]
    if only == "whole-process":
        run(command + ["--product", "user-bench"] + list(swift_flags))
    elif only == "dpop":
        run(command + ["--product", "oauth2-bench"] + list(swift_flags))
    elif only == "requests":
        for product in ("oauth2-bench", "handoff-floor", "user-bench"):
            run(command + ["--product", product] + list(swift_flags))
    else:
        run(command + list(swift_flags))
    if not scratch and only is None:
        for product in ("oauth2-start", "handoff-floor", "oauth2-bench"):
            run(["swift", "build", "-c", "release", "--package-path", HERE, "--product", product,
                 "--static-swift-stdlib", "--scratch-path", START_STATIC_SCRATCH])
    os.makedirs(BUILD, exist_ok=True)
    cflags = subprocess.run(["pkg-config", "--cflags", "libcurl"], capture_output=True, text=True).stdout.split()
    libs = subprocess.run(["pkg-config", "--libs", "libcurl"], capture_output=True, text=True).stdout.split() or ["-lcurl"]
    run(["cc", "-O2", "-Wall", "-Wextra", "-o", BASELINE, os.path.join(HERE, "baseline", "curl_baseline.c")] + cflags + libs)
    build_go()


def build_go():
    """The Go row's program, offline: GOPATH mode on Debian's sources, no module proxy."""
    env = dict(os.environ, GO111MODULE="off", GOPATH=DEBIAN_GOPATH, GOFLAGS="", GOPROXY="off",
               GOCACHE=os.path.join(BUILD, "go-cache"))
    run(["go", "build", "-o", GO_BENCH, GO_SOURCE], env=env)


def build_cli(choice):
    """The command-line tool for the start row: `auto` builds the main package's `oauth2` in
    release; `none` leaves the row out; anything else is the path of an `oauth2` binary."""
    if choice == "none":
        return None
    if choice != "auto":
        return os.path.abspath(choice)
    # As a command-line tool is best shipped (scripts/build-cli.sh: the Swift
    # runtime linked in, lld with packed relative relocations); a scratch
    # folder of its own, so the package's other release builds are not rebuilt.
    run([os.path.join(ROOT, "scripts", "build-cli.sh"), "--scratch-path", CLI_SCRATCH, "oauth2"],
        stdout=subprocess.DEVNULL)
    return CLI_RELEASE


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Nginx:
    """nginx from Benchmarks/nginx/nginx.conf.template, in a temporary prefix, in the foreground."""

    def __init__(self):
        self.prefix = tempfile.mkdtemp(prefix="oauth2-bench-nginx-")
        self.port = free_port()
        for sub in ("logs", "tmp"):
            os.makedirs(os.path.join(self.prefix, sub))
        # The workers run as nobody when started by root: let them into the prefix.
        os.chmod(self.prefix, 0o755)
        with open(os.path.join(HERE, "nginx", "nginx.conf.template")) as template:
            config = template.read().replace("@PORT@", str(self.port)).replace("@ACCESS_TOKEN@", ACCESS_TOKEN)
        with open(os.path.join(self.prefix, "nginx.conf"), "w") as out:
            out.write(config)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.token_log = os.path.join(self.prefix, "logs", "token.log")
        self.process = None

    def start(self):
        command = [nginx_binary(), "-p", self.prefix, "-c", "nginx.conf", "-e", "logs/error.log"]
        log("+ " + " ".join(command))
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited with status {self.process.returncode}; see {self.prefix}/logs/error.log")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("nginx did not start listening within 10 s")
        self.check()

    def check(self):
        """The server behaves as the benchmark assumes: a token, a 401 with its challenge, a 200."""
        token = urllib.request.urlopen(urllib.request.Request(self.base_url + "/token", data=b"grant_type=client_credentials"))
        assert json.load(token)["access_token"] == ACCESS_TOKEN
        try:
            urllib.request.urlopen(self.base_url + "/api/resource")
            raise RuntimeError("the resource answered without a token")
        except urllib.error.HTTPError as error:
            assert error.code == 401 and error.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
        request = urllib.request.Request(self.base_url + "/api/resource", headers={"Authorization": "Bearer " + ACCESS_TOKEN})
        assert urllib.request.urlopen(request).status == 200

    def pids(self):
        """The master's and its workers' thread ids."""
        master = self.process.pid
        try:
            with open(f"/proc/{master}/task/{master}/children") as children:
                processes = [master] + [int(pid) for pid in children.read().split()]
        except OSError:
            processes = [master]
        threads = []
        for pid in processes:
            try:
                threads += [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
            except OSError:
                pass
        return threads

    def set_cpus(self, cpus):
        """Pins nginx (master, workers, every thread) to `cpus`, as `taskset -a -p` would."""
        for tid in self.pids():
            os.sched_setaffinity(tid, cpus)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.prefix, ignore_errors=True)


class Postgres:
    """The throwaway cluster of scripts/postgres.sh --name bench, for the PostgreSQL store's rows."""

    SCRIPT = os.path.join(ROOT, "scripts", "postgres.sh")

    def __init__(self):
        self.started = False
        self.url = None
        self.password_file = None

    def start(self):
        self.started = True
        run([self.SCRIPT, "--name", "bench", "start"], stdout=subprocess.DEVNULL)
        with open(os.path.join(ROOT, ".build", "postgres", "bench", "env.json")) as env:
            settings = json.load(env)
        self.url = settings["url"] + "?sslmode=disable"
        self.password_file = settings["password_file"]

    def stop(self):
        if self.started:
            subprocess.run([self.SCRIPT, "--name", "bench", "stop"], check=False)


class Stores:
    """The oauth2-bench options of the file store (a temporary directory) and the PostgreSQL store."""

    def __init__(self, postgres):
        self.directory = tempfile.mkdtemp(prefix="oauth2-bench-stores-")
        self.postgres = postgres

    def options(self, kind, use):
        if kind == "file":
            return ["--store", "file", "--store-dir", os.path.join(self.directory, use)]
        return ["--store", "postgres", "--database-url", self.postgres.url,
                "--database-password-file", self.postgres.password_file]

    def remove(self):
        shutil.rmtree(self.directory, ignore_errors=True)


STORE_KINDS = (("file", "file store"), ("postgres", "PostgreSQL store"))


class Base:
    """Another revision of this repository (`--base REV`): its own Benchmarks/ against its own library,
    from `git archive` into /tmp, built in release. The folder is kept, so that the next run with the
    same revision builds incrementally; remove it when done."""

    def __init__(self, rev):
        result = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", rev + "^{commit}"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"--base {rev}: not a commit of this repository: {result.stderr.strip()}")
        self.commit = result.stdout.strip()
        self.label = rev if rev == self.commit[:len(rev)] else f"{rev} ({self.commit[:10]})"
        self.root = os.path.join(tempfile.gettempdir(), f"swift-oauth2-bench-base-{self.commit[:12]}")
        self.benchmarks = os.path.join(self.root, "Benchmarks")
        self.bench = os.path.join(self.benchmarks, ".build", "release", "oauth2-bench")
        self.user_bench = os.path.join(self.benchmarks, ".build", "release", "user-bench")

    def prepare(self, only):
        if not os.path.isdir(self.root):
            os.makedirs(self.root)
            log(f"+ git archive {self.commit} | tar -x -C {self.root}")
            archive = subprocess.Popen(["git", "-C", ROOT, "archive", self.commit], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", self.root], stdin=archive.stdout, check=True)
            if archive.wait() != 0:
                raise RuntimeError(f"git archive {self.commit} failed")
        products = ["user-bench"] if only == "whole-process" else ["oauth2-bench", "user-bench"]
        for product in products:
            if product == "user-bench" and not os.path.isdir(os.path.join(self.benchmarks, "Sources", "user-bench")):
                log(f"{self.label} has no Benchmarks/Sources/user-bench: no whole-process row for it")
                self.user_bench = None
                continue
            run(["swift", "build", "-c", "release", "--package-path", self.benchmarks, "--product", product])
        log(f"the base's build is kept in {self.root}: remove it when done")

    def command(self, ours):
        """The base's version of one of our in-process commands, or None (a program it does not build)."""
        if BENCH not in ours:
            return None
        return [self.bench if part == BENCH else part for part in ours]


# The request rows `--only requests` keeps: the three request scenarios, unpinned and on one CPU,
# each with Go beside ours.
REQUEST_KEYS = ("sequential", "concurrent-8", "concurrent-64",
                "sequential-one-cpu", "concurrent-8-one-cpu", "concurrent-64-one-cpu")


def selected_scenarios(url, requests, token_log, stores, pin_cpu, only):
    rows = scenarios(url, requests, token_log, stores, pin_cpu)
    if only == "requests":
        return [row for row in rows if row[0] in REQUEST_KEYS]
    if only in ("whole-process", "dpop"):
        return []
    return rows


# MARK: - Running


def measure(command):
    """Runs one benchmark process and returns its JSON lines."""
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


# Each scenario: its key, its label, the baseline's command (or the key of the
# scenario whose baseline it is compared with, in the same round), ours, the
# Go program's (or None), the hand-off floor's (or None) and whether nginx and
# the clients share one CPU.
# Every unpinned request scenario also runs "on the transport's executor":
# the same callers as tasks that prefer CurlTransport.executor, against the
# same baseline. The pinned ones run every program under `taskset -c CPU`
# while nginx is pinned to that CPU too.
def scenarios(url, requests, token_log, stores=None, pin_cpu=0):
    store_options = (lambda kind: stores.options(kind, "requests")) if stores else (lambda kind: [])
    request_scenarios = [
        ("sequential", "sequential", "1 connection",
         [BASELINE, "sequential", url, str(requests)],
         [BENCH, "sequential", "--url", url, "--requests", str(requests)],
         [GO_BENCH, "sequential", url, str(requests)],
         [FLOOR, "sequential", url, str(requests)]),
        ("concurrent-8", "8 concurrent callers", None,
         [BASELINE, "concurrent", url, str(requests), "8"],
         [BENCH, "concurrent", "--url", url, "--requests", str(requests), "--concurrency", "8"],
         [GO_BENCH, "concurrent", url, str(requests), "8"],
         [FLOOR, "concurrent", url, str(requests), "8"]),
        ("concurrent-64", "64 concurrent callers", None,
         [BASELINE, "concurrent", url, str(requests), "64"],
         [BENCH, "concurrent", "--url", url, "--requests", str(requests), "--concurrency", "64"],
         [GO_BENCH, "concurrent", url, str(requests), "64"],
         [FLOOR, "concurrent", url, str(requests), "64"]),
    ]
    def linked_in(command):
        # The same program built with the Swift runtime linked in.
        return [{BENCH: BENCH_STATIC, FLOOR: FLOOR_STATIC}.get(part, part) for part in command]

    rows = []
    for key, label, detail, baseline, ours, go, floor in request_scenarios:
        rows.append((key, f"{label}, {detail}" if detail else label, baseline, ours, go, floor, False))
        rows.append((f"{key}-static", f"{label}, the Swift runtime linked in", key, linked_in(ours), None,
                     linked_in(floor), False))
        rows.append((f"{key}-on-transport", f"{label}, on the transport's executor", key,
                     ours + ["--executor", "transport"], None, None, False))
        # CurlTransport.send of a request signed once: the client's share is
        # the difference from the row above.
        rows.append((f"{key}-transport-layer", f"{label}, `CurlTransport` alone (no client)", key,
                     ours + ["--layer", "transport"], None, None, False))
        if key == "sequential":
            # The same requests with the caller never driving libcurl itself:
            # every request handed to the transport's thread and back.
            rows.append(("sequential-handed-off", f"{label}, every request handed to the transport thread (`callerDrivenWait` 0)",
                         key, ours + ["--caller-driven-wait-us", "0"], None, None, False))
            # The token in a file or PostgreSQL store: the client keeps it in
            # memory, so only the grant touches the store; same baseline.
            for kind, store_label in STORE_KINDS:
                rows.append((f"sequential-{kind}", f"sequential, {store_label}", key, ours + store_options(kind), None, None, False))
    rows.append(("storm", "refresh storm, 1000 callers",
                 [BASELINE, "concurrent", url, "1000", "1000"],
                 [BENCH, "storm", "--url", url, "--callers", "1000", "--token-log", token_log], None, None, False))
    pin = ["taskset", "-c", str(pin_cpu)]
    for key, label, _, baseline, ours, go, floor in request_scenarios:
        rows.append((f"{key}-one-cpu", f"{label}, nginx and client on one CPU", pin + baseline, pin + ours, pin + go,
                     pin + floor, True))
        rows.append((f"{key}-one-cpu-static", f"{label}, one CPU, the Swift runtime linked in", f"{key}-one-cpu",
                     pin + linked_in(ours), None, pin + linked_in(floor), True))
        rows.append((f"{key}-one-cpu-transport-layer", f"{label}, one CPU, `CurlTransport` alone (no client)",
                     f"{key}-one-cpu", pin + ours + ["--layer", "transport"], None, None, True))
        if key == "sequential":
            rows.append(("sequential-handed-off-one-cpu", f"{label}, one CPU, every request handed to the transport thread",
                         f"{key}-one-cpu", pin + ours + ["--caller-driven-wait-us", "0"], None, None, True))
    return rows


def start_commands(url, cli):
    """The start row: one token, one GET (or, for the CLI, a stored token printed), exit."""
    commands = [
        ("libcurl", [BASELINE, "sequential", url, "1"]),
        ("swift-oauth2", [START, url]),
        ("swift-oauth2-static", [START_STATIC, url]),
        ("handoff-floor-static", [START_FLOOR_STATIC, "sequential", url, "1"]),
        ("go-x-oauth2", [GO_BENCH, "sequential", url, "1"]),
    ]
    if cli:
        commands.append(("cli", [cli] + CLI_COMMAND))
    return commands


# The command-line tool's start-up row: what it runs on a stored, valid token,
# and how the store gets that token first (CLI_SEED, once). Both read the
# endpoints, client and store from OAUTH2_* variables (cli_environment).
CLI_COMMAND = ["token", "--print-access-token"]
CLI_SEED = ["client-credentials"]


def cli_environment(nginx, store_directory):
    return dict(os.environ, OAUTH2_TOKEN_URL=nginx.base_url + "/token", OAUTH2_CLIENT_ID="bench-client",
                OAUTH2_CLIENT_SECRET="bench-secret", OAUTH2_STORE=store_directory, OAUTH2_ACCOUNT="bench")


def timed(command, env=None):
    """Runs one short process under GNU time: its wall time in ms (from here, fork to exit) and its
    peak RSS in KiB (time's own ru_maxrss of the child: not inflated by this Python process,
    whose pages a forked child would start with)."""
    started = time.perf_counter_ns()
    result = subprocess.run(["/usr/bin/time", "-f", "@@rss %M"] + command, capture_output=True, text=True, env=env)
    wall_ms = (time.perf_counter_ns() - started) / 1e6
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    rss = next(int(line.split()[1]) for line in result.stderr.splitlines() if line.startswith("@@rss "))
    return wall_ms, rss, result.stdout


def wait_for_lines(path, count):
    """The line count of nginx's token log once it reaches `count` (nginx logs after answering)."""
    deadline = time.monotonic() + 2
    while True:
        lines = count_lines(path)
        if lines >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.01)


def count_lines(path):
    try:
        with open(path, "rb") as log_file:
            return log_file.read().count(b"\n")
    except OSError:
        return 0


def process_storm(nginx, options, processes, callers):
    """The refresh storm across processes: `processes` oauth2-bench storm-process
    on one store holding an expired token, started together; the token
    requests nginx saw and the time from the start signal until all finished."""
    seeded = count_lines(nginx.token_log)
    measure([BENCH, "storm-seed", "--url", nginx.base_url] + options)
    before = wait_for_lines(nginx.token_log, seeded + 1)
    command = [BENCH, "storm-process", "--url", nginx.base_url, "--callers", str(callers)] + options
    log(f"+ {processes} × " + " ".join(command))
    children = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(processes)]
    records = []
    try:
        for child in children:
            if child.stdout.readline().strip() != "ready":
                child.wait(timeout=30)
                raise RuntimeError(f"storm-process failed ({child.returncode}):\n{child.stderr.read()}")
        started_us = time.monotonic_ns() // 1000
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()  # communicate() closes it
        for child in children:
            out, err = child.communicate(timeout=120)
            if child.returncode != 0:
                raise RuntimeError(f"storm-process failed ({child.returncode}):\n{out}{err}")
            records += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    time.sleep(0.2)  # the last token request's log line, if there were more than one
    return {
        "scenario": "process-storm",
        "processes": processes,
        "requests": processes * callers,
        "errors": sum(record["errors"] for record in records),
        "token_requests": count_lines(nginx.token_log) - before,
        "seconds": (max(record["finished_us"] for record in records) - started_us) / 1e6,
    }


def run_rounds(nginx, stores, requests, rounds, parse_iterations, storm_processes, storm_callers,
               pin_cpu, start_runs, cli, cli_env, account_sizes, account_iterations, only=None, base=None,
               whole_process_runs=3):
    results = []  # (round, key, implementation, record)
    all_cpus = os.sched_getaffinity(0)
    for number in range(1, rounds + 1):
        log(f"round {number}/{rounds}")
        if only == "dpop":
            results += dpop_round(number, nginx.base_url, requests, parse_iterations)
            continue
        if only != "whole-process":
            results += in_process_round(number, nginx, stores, requests, pin_cpu, all_cpus, only, base,
                                        storm_processes, storm_callers)
        results += whole_process_round(number, nginx.base_url, requests, whole_process_runs, base)
        if only is not None:
            continue
        results += other_rows_round(number, nginx, start_runs, cli, cli_env, parse_iterations, account_sizes,
                                    account_iterations)
    return results


def in_process_round(number, nginx, stores, requests, pin_cpu, all_cpus, only, base, storm_processes, storm_callers):
    """One round of the in-process rows: each program times its own requests."""
    results = []
    if only is None:
        for kind, _ in STORE_KINDS:
            record = process_storm(nginx, stores.options(kind, "storm"), storm_processes, storm_callers)
            results.append((number, f"process-storm-{kind}", "swift-oauth2", record))
    for key, _, baseline, ours, go, floor, pinned in selected_scenarios(nginx.base_url, requests, nginx.token_log,
                                                                         stores, pin_cpu, only):
        nginx.set_cpus({pin_cpu} if pinned else all_cpus)
        try:
            base_command = base.command(ours) if base else None
            for implementation, command in (("libcurl", baseline), ("swift-oauth2", ours),
                                            ("swift-oauth2-base", base_command), ("go-x-oauth2", go),
                                            ("handoff-floor", floor)):
                if command is None or isinstance(command, str):
                    continue  # no such program, or compared with another scenario's baseline of this round
                for record in measure(command):
                    results.append((number, key, implementation, record))
        finally:
            nginx.set_cpus(all_cpus)
    return results


# The whole-process rows: (key, label, the arguments every program takes).
WHOLE_PROCESS_SCENARIOS = (
    ("sequential", "sequential", ["sequential", "@URL@", "@N@"]),
    ("concurrent-8", "8 concurrent callers", ["concurrent", "@URL@", "@N@", "8"]),
)


def whole_process_round(number, url, requests, runs, base):
    """One round of the whole-process rows: libcurl (C), ours (user-bench), the base's and Go, each
    timed from exec to exit by hyperfine, `runs` runs each after one warm-up run; the order of the
    programs turns by one every round, so that none always follows the same one."""
    results = []
    programs = [("libcurl", BASELINE), ("swift-oauth2", USER_BENCH), ("go-x-oauth2", GO_BENCH)]
    if base and base.user_bench:
        programs.insert(2, ("swift-oauth2-base", base.user_bench))
    shift = (number - 1) % len(programs)
    programs = programs[shift:] + programs[:shift]
    for key, _, arguments in WHOLE_PROCESS_SCENARIOS:
        arguments = [{"@URL@": url, "@N@": str(requests)}.get(part, part) for part in arguments]
        with tempfile.NamedTemporaryFile(suffix=".json") as export:
            command = ["hyperfine", "--style", "none", "-N", "--warmup", "1", "--runs", str(runs),
                       "--export-json", export.name]
            command += [" ".join([binary] + arguments) for _, binary in programs]
            log("+ " + " ".join(command))
            # hyperfine's warnings (outliers on a busy machine) only when it fails: the rounds' ranges say as much.
            finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if finished.returncode != 0:
                raise RuntimeError(f"hyperfine failed ({finished.returncode}):\n{finished.stderr}")
            timings = json.load(export)["results"]
        for (implementation, _), timing in zip(programs, timings):
            if any(code != 0 for code in timing.get("exit_codes", [])):
                raise RuntimeError(f"{timing['command']} failed in the whole-process rows")
            results.append((number, f"whole-{key}", implementation, {
                "scenario": f"whole-{key}", "implementation": implementation, "runs": runs, "errors": 0,
                "requests": requests, "wall_ms": statistics.median(timing["times"]) * 1000,
            }))
    return results


def dpop_round(number, url, requests, parse_iterations):
    """One round of the DPoP rows: one proof (ES256, `ath`, a fresh `jti`), in process, no network; then
    libcurl's sequential GETs, ours with a bearer token and ours with a DPoP-bound one (a proof per GET)."""
    results = []
    for command in ([BENCH, "dpop-proof", "--iterations", str(parse_iterations)],
                    [BENCH, "overhead", "--iterations", str(parse_iterations)],
                    [BENCH, "overhead", "--iterations", str(parse_iterations), "--auth", "dpop"]):
        results += [(number, record["scenario"], "swift-oauth2", record) for record in measure(command)]
    for key, implementation, command in (
            ("sequential", "libcurl", [BASELINE, "sequential", url, str(requests)]),
            ("sequential", "swift-oauth2", [BENCH, "sequential", "--url", url, "--requests", str(requests)]),
            ("sequential-dpop", "swift-oauth2",
             [BENCH, "sequential", "--url", url, "--requests", str(requests), "--auth", "dpop"])):
        for record in measure(command):
            results.append((number, key, implementation, record))
    return results


def dpop_table(results):
    """The bearer and DPoP-signed sequential rows, against libcurl's of the same round."""
    def records(key, implementation):
        return {r: rec for (r, k, i, rec) in results if k == key and i == implementation}
    base, bearer = records("sequential", "libcurl"), records("sequential", "swift-oauth2")
    lines = ["| sequential, 1 connection | swift-oauth2 req/s | time ratio ours/libcurl | time ratio DPoP/bearer"
             " | p50 µs | p99 µs | CPU µs/req |", "|---|---|---|---|---|---|---|"]
    for key, label in (("sequential", "bearer token"), ("sequential-dpop", "DPoP-bound token, a proof per GET")):
        ours = records(key, "swift-oauth2")
        if not ours:
            continue
        common = sorted(set(base) & set(ours))
        against_bearer = sorted(set(bearer) & set(ours))
        lines.append(
            f"| {label} | {median_range([o['requests_per_second'] for o in ours.values()], lambda v: f'{v:,.0f}')}"
            f" | {median_range([base[r]['requests_per_second'] / ours[r]['requests_per_second'] for r in common], lambda v: f'{v:.2f}×')}"
            f" | {median_range([bearer[r]['requests_per_second'] / ours[r]['requests_per_second'] for r in against_bearer], lambda v: f'{v:.2f}×')}"
            f" | {statistics.median(o['p50_us'] for o in ours.values()):.1f}"
            f" | {statistics.median(o['p99_us'] for o in ours.values()):.1f}"
            f" | {statistics.median(o['cpu_seconds'] / o['requests'] * 1e6 for o in ours.values()):.1f} |"
        )
    return "\n".join(lines)


def other_rows_round(number, nginx, start_runs, cli, cli_env, parse_iterations, account_sizes, account_iterations):
    """One round of the start, parsing, client-overhead and per-account rows."""
    results = []
    # Start-up: each program start_runs times, interleaved; the round's median.
    samples = {}
    commands = start_commands(nginx.base_url, cli)
    for _ in range(start_runs):
        for implementation, command in commands:
            wall_ms, rss, out = timed(command, env=cli_env if implementation == "cli" else None)
            if implementation == "cli" and out.strip() != ACCESS_TOKEN:
                raise RuntimeError(f"{' '.join(command)} printed {out.strip()!r}, not the stored access token")
            samples.setdefault(implementation, []).append((wall_ms, rss))
    for implementation, values in samples.items():
        results.append((number, "start", implementation, {
            "scenario": "start", "implementation": implementation, "runs": len(values), "errors": 0,
            "wall_ms": statistics.median(v[0] for v in values),
            "peak_rss_kib": statistics.median(v[1] for v in values),
        }))
    for record in measure([BENCH, "parse", "--iterations", str(parse_iterations)]):
        results.append((number, record["scenario"], "swift-oauth2", record))
    for record in measure([BENCH, "overhead", "--iterations", str(parse_iterations * 3)]):
        results.append((number, record["scenario"], "swift-oauth2", record))
    for record in measure([BENCH, "overhead", "--iterations", str(parse_iterations * 3), "--token-bytes", "1200"]):
        results.append((number, record["scenario"], "swift-oauth2", record))
    for record in measure([BENCH, "accounts", "--sizes", ",".join(map(str, account_sizes)),
                           "--iterations", str(account_iterations)]):
        results.append((number, record["scenario"], "swift-oauth2", record))
    return results


# MARK: - Reporting


def median_range(values, fmt):
    if not values:
        return "–"
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def verdict(ratios):
    """Ours against Go from the rounds' time ratios ours/Go: leads or trails only when every round agrees."""
    if not ratios:
        return "–"
    word = "**leads**" if max(ratios) < 1 else "trails" if min(ratios) > 1 else "level"
    return f"{word}: {median_range(ratios, lambda v: f'{v:.2f}×')}"


def whole_process_table(results, base):
    """The whole-process rows: wall time from exec to exit of each program, its ratio to libcurl's of the
    same round, and ours against Go (and against the base, with --base)."""
    def records(key, implementation):
        return {r: rec for (r, k, i, rec) in results if k == key and i == implementation}

    def ratios(numerator, denominator):
        common = sorted(set(numerator) & set(denominator))
        return [numerator[r]["wall_ms"] / denominator[r]["wall_ms"] for r in common]

    ms = lambda v: f"{v:,.0f}" if v >= 100 else f"{v:.1f}"
    ratio = lambda v: f"{v:.2f}×"
    with_base = base is not None and base.user_bench is not None
    lines = ["| whole process (exec to exit, hyperfine) | wall ms libcurl | wall ms swift-oauth2 | wall ms Go x/oauth2"
             " | time ratio ours/libcurl | time ratio Go/libcurl | ours against Go (ours/Go) |"
             + (f" ours against {base.label} (ours/base) |" if with_base else ""),
             "|---|---|---|---|---|---|---|" + ("---|" if with_base else "")]
    for key, label, _ in WHOLE_PROCESS_SCENARIOS:
        c, ours, go = (records(f"whole-{key}", i) for i in ("libcurl", "swift-oauth2", "go-x-oauth2"))
        if not ours:
            continue
        wall = lambda recs: median_range([rec["wall_ms"] for rec in recs.values()], ms)
        row = (f"| {label}, {next(iter(ours.values()))['requests']:,} requests | {wall(c)} | {wall(ours)} | {wall(go)}"
               f" | **{median_range(ratios(ours, c), ratio)}** | {median_range(ratios(go, c), ratio)}"
               f" | {verdict(ratios(ours, go))} |")
        if with_base:
            row += f" {compared_with_base(ratios(ours, records(f'whole-{key}', 'swift-oauth2-base')))} |"
        lines.append(row)
    return "\n".join(lines)


def compared_with_base(ratios):
    """This tree against the base from the rounds' time ratios ours/base."""
    if not ratios:
        return "–"
    word = "faster" if max(ratios) < 1 else "slower" if min(ratios) > 1 else "same within noise"
    return f"{word}: {median_range(ratios, lambda v: f'{v:.2f}×')}"


def base_table(results, base, only):
    """The in-process request rows of this tree and of the base, from the same rounds."""
    def records(key, implementation):
        return {r: rec for (r, k, i, rec) in results if k == key and i == implementation}

    rps = lambda v: f"{v:,.0f}"
    ratio = lambda v: f"{v:.2f}×"
    lines = [f"| in process, this tree against {base.label} | libcurl req/s | swift-oauth2 req/s | base req/s"
             " | time ratio ours/libcurl | time ratio base/libcurl | ours against base (ours/base) |",
             "|---|---|---|---|---|---|---|"]
    for key, label, baseline, _, _, _, _ in selected_scenarios("", 0, "", None, 0, only):
        theirs = records(key, "swift-oauth2-base")
        if not theirs:
            continue
        c = records(baseline if isinstance(baseline, str) else key, "libcurl")
        ours = records(key, "swift-oauth2")
        to = lambda a, b: [b[r]["requests_per_second"] / a[r]["requests_per_second"] for r in sorted(set(a) & set(b))]
        lines.append(
            f"| {label} | {median_range([x['requests_per_second'] for x in c.values()], rps)}"
            f" | {median_range([x['requests_per_second'] for x in ours.values()], rps)}"
            f" | {median_range([x['requests_per_second'] for x in theirs.values()], rps)}"
            f" | {median_range(to(ours, c), ratio)} | {median_range(to(theirs, c), ratio)}"
            f" | {compared_with_base(to(ours, theirs))} |"
        )
    return "\n".join(lines)


def table(results, rounds, only=None, base_revision=None):
    def records(key, implementation):
        return {r: rec for (r, k, i, rec) in results if k == key and i == implementation}

    if only == "dpop":
        return no_network_table(results, (
            ("dpop-proof", DPOP_PROOF_LABEL),
            ("send-in-process", "`send` through a transport that answers at once, bearer token"),
            ("send-in-process-dpop", "the same with a DPoP-bound token (a proof per `send`)"),
        )) + "\n\n" + dpop_table(results) + "\n" + (
            f"Medians over {rounds} rounds, range in parentheses.")
    if only == "whole-process":
        return whole_process_table(results, base_revision) + "\n" + (
            f"Medians over {rounds} rounds, range in parentheses; a time ratio of 1.00× is parity, higher is slower.")

    rps = lambda v: f"{v:,.0f}"
    ratio = lambda v: f"{v:.2f}×"
    us = lambda v: f"{v:,.0f}" if v >= 100 else f"{v:.1f}"
    lines = [
        "| scenario (in process) | libcurl req/s | swift-oauth2 req/s | Go x/oauth2 req/s | time ratio ours/libcurl"
        " | time ratio Go/libcurl | ours against Go (ours/Go) | p50 µs libcurl / ours / Go | p99 µs libcurl / ours / Go"
        " | CPU µs/req libcurl / ours / Go | peak RSS MiB libcurl / ours / Go |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    def cpu(recs):
        """Median CPU µs per request of one program's records in a row."""
        if not recs:
            return "–"
        return f"{statistics.median([rec['cpu_seconds'] / rec['requests'] * 1e6 for rec in recs.values()]):.1f}"

    def time_ratios(base, other):
        common = sorted(set(base) & set(other))
        return [base[r]["requests_per_second"] / other[r]["requests_per_second"] for r in common]

    for key, label, baseline, _, _, _, _ in selected_scenarios("", 0, "", None, 0, only):
        # A row compared with another's baseline shows that row's libcurl and Go, of the same rounds.
        base = records(baseline if isinstance(baseline, str) else key, "libcurl")
        ours = records(key, "swift-oauth2")
        go = records(baseline if isinstance(baseline, str) else key, "go-x-oauth2")
        med = lambda recs, field, fmt: fmt(statistics.median([rec[field] for rec in recs.values()])) if recs else "–"
        mib = lambda v: f"{v / 1024:.1f}"
        three = lambda field, fmt: " / ".join(med(recs, field, fmt) for recs in (base, ours, go))
        lines.append(
            f"| {label} | {median_range([b['requests_per_second'] for b in base.values()], rps)}"
            f" | {median_range([o['requests_per_second'] for o in ours.values()], rps)}"
            f" | {median_range([g['requests_per_second'] for g in go.values()], rps)}"
            f" | **{median_range(time_ratios(base, ours), ratio)}**"
            f" | {median_range(time_ratios(base, go), ratio)}"
            f" | {verdict(time_ratios(go, ours))}"
            f" | {three('p50_us', us)} | {three('p99_us', us)}"
            f" | {' / '.join(cpu(recs) for recs in (base, ours, go))}"
            f" | {three('peak_rss_kib', mib)} |"
        )
    # The hand-off floor beside libcurl, ours and Go, in the rows it runs in.
    lines.append("")
    lines.append("| scenario | time ratio floor/libcurl | time ratio ours/floor | time ratio Go/libcurl"
                 " | CPU µs/req libcurl / floor / ours / Go | context: floor req/s |")
    lines.append("|---|---|---|---|---|---|")
    for key, label, baseline, _, _, floor, _ in selected_scenarios("", 0, "", None, 0, only):
        if floor is None:
            continue
        # A row compared with another's baseline takes that row's libcurl and Go, of the same rounds.
        same_round = baseline if isinstance(baseline, str) else key
        base, go = records(same_round, "libcurl"), records(same_round, "go-x-oauth2")
        ours, low = records(key, "swift-oauth2"), records(key, "handoff-floor")
        lines.append(
            f"| {label} | {median_range(time_ratios(base, low), ratio)} | {median_range(time_ratios(low, ours), ratio)}"
            f" | {median_range(time_ratios(base, go), ratio)}"
            f" | {' / '.join(cpu(recs) for recs in (base, low, ours, go))}"
            f" | {median_range([rec['requests_per_second'] for rec in low.values()], rps)} |"
        )
    lines.append("")
    lines.append(whole_process_table(results, base_revision))
    if base_revision:
        lines.append("")
        lines.append(base_table(results, base_revision, only))
    if only == "requests":
        lines.append(f"Medians over {rounds} rounds, range in parentheses; a time ratio of 1.00× is parity, higher is slower.")
        return "\n".join(lines)
    start_label = {"libcurl": "raw libcurl (C)", "swift-oauth2": "swift-oauth2 (`oauth2-start`: OAuth2 alone)",
                   "swift-oauth2-static": "swift-oauth2 (`oauth2-start`, the Swift runtime linked in)",
                   "handoff-floor-static": "start-up floor (`handoff-floor`, the Swift runtime linked in: no OAuth2)",
                   "go-x-oauth2": "Go x/oauth2", "cli": "`oauth2 " + " ".join(CLI_COMMAND) + "` (stored token)"}
    base = records("start", "libcurl")
    if base:
        lines.append("")
        lines.append("| start: one token, one GET, exit | wall ms | time ratio to libcurl | peak RSS MiB |")
        lines.append("|---|---|---|---|")
        for implementation, label in start_label.items():
            recs = records("start", implementation)
            if not recs:
                continue
            common = sorted(set(base) & set(recs))
            lines.append(
                f"| {label} | {median_range([rec['wall_ms'] for rec in recs.values()], lambda v: f'{v:.1f}')}"
                f" | {'–' if implementation == 'libcurl' else median_range([recs[r]['wall_ms'] / base[r]['wall_ms'] for r in common], ratio)}"
                f" | {statistics.median(rec['peak_rss_kib'] for rec in recs.values()) / 1024:.1f} |"
            )
    account_keys = sorted({k for (_, k, _, _) in results if k.startswith("accounts-")}, key=lambda k: int(k.split("-")[1]))
    if account_keys:
        lines.append("")
        lines.append("| accounts in one provider (client + token each, in memory) | RSS MiB | bytes per account | `send` p50 µs | `send` p99 µs |")
        lines.append("|---|---|---|---|---|")
        for key in account_keys:
            recs = records(key, "swift-oauth2")
            sample = next(iter(recs.values()))
            per_account = (median_range([rec["bytes_per_account"] for rec in recs.values()], lambda v: f"{v:,.0f}")
                           if sample["accounts"] > 1 else "–")
            lines.append(
                f"| {int(sample['accounts']):,} | {statistics.median(rec['rss_kib'] for rec in recs.values()) / 1024:.1f}"
                f" | {per_account}"
                f" | {median_range([rec['p50_us'] for rec in recs.values()], lambda v: f'{v:.2f}')}"
                f" | {statistics.median(rec['p99_us'] for rec in recs.values()):.2f} |"
            )
    lines.append("")
    lines.append(no_network_table(results, (
        ("parse-token-response", "parse a token response"), ("parse-redirect", "validate a redirect URL"),
        ("prepare-transfer", "prepare a signed GET for libcurl (`CurlTransport`, caller's side)"),
        ("dpop-proof", DPOP_PROOF_LABEL),
        ("send-in-process", "`send` through a transport that answers at once"),
        ("send-in-process-long-token", "the same with a 1,200-byte access token (a JWT's size)"))))
    storms = records("storm", "swift-oauth2")
    counts = sorted({int(rec.get("token_requests", -1)) for rec in storms.values()})
    lines.append("")
    lines.append(
        f"Refresh storm: token requests nginx saw per storm of 1000 callers: {', '.join(map(str, counts))}"
        f"; time until all 1000 completed: {median_range([rec['seconds'] * 1000 for rec in storms.values()], lambda v: f'{v:.1f} ms')}."
    )
    file_rows, postgres_rows = records("sequential-file", "swift-oauth2"), records("sequential-postgres", "swift-oauth2")
    common = sorted(set(file_rows) & set(postgres_rows))
    lines.append(
        "Sequential signed requests, PostgreSQL store / file store time ratio (same round): "
        + median_range([file_rows[r]["requests_per_second"] / postgres_rows[r]["requests_per_second"] for r in common], ratio)
        + "."
    )
    for kind, store_label in STORE_KINDS:
        storms = records(f"process-storm-{kind}", "swift-oauth2")
        if not storms:
            continue
        sample = next(iter(storms.values()))
        counts = sorted({int(rec["token_requests"]) for rec in storms.values()})
        lines.append(
            f"Refresh storm across {sample['processes']} processes ({sample['requests'] // sample['processes']} callers each), "
            f"{store_label}: token requests nginx saw per storm: {', '.join(map(str, counts))}; time from the start "
            f"signal until all finished: {median_range([rec['seconds'] * 1000 for rec in storms.values()], lambda v: f'{v:.1f} ms')}."
        )
    lines.append(f"Medians over {rounds} rounds, range in parentheses; a time ratio of 1.00× is parity, higher is slower.")
    return "\n".join(lines)


DPOP_PROOF_LABEL = "make one DPoP proof (ES256 signature, `ath`, a fresh `jti`; goal p50 under 50 µs)"


def no_network_table(results, rows):
    """The in-process rows that need no network: rate, p50 and p99 per operation."""
    lines = ["| in process, no network | per second | p50 µs | p99 µs |", "|---|---|---|---|"]
    for key, label in rows:
        recs = {r: rec for (r, k, i, rec) in results if k == key and i == "swift-oauth2"}
        if not recs:
            continue
        lines.append(
            f"| {label} | {median_range([rec['requests_per_second'] for rec in recs.values()], lambda v: f'{v:,.0f}')}"
            f" | {statistics.median([rec['p50_us'] for rec in recs.values()]):.2f}"
            f" | {statistics.median([rec['p99_us'] for rec in recs.values()]):.2f} |"
        )
    return "\n".join(lines)


def machine_description():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    curl = subprocess.run(["curl-config", "--version"], capture_output=True, text=True).stdout.strip() or "libcurl ?"
    nginx = subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True).stderr.strip()
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    go = subprocess.run(["go", "version"], capture_output=True, text=True).stdout.split()
    oauth2_go = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "golang-golang-x-oauth2-dev"],
                               capture_output=True, text=True).stdout.strip() or "?"
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, "
        f"{curl}, {nginx.replace('nginx version: ', '')}, {swift[0] if swift else 'swift ?'}, "
        f"{go[2] if len(go) > 2 else 'go ?'} with golang.org/x/oauth2 {oauth2_go} (Debian); "
        f"load average at start {os.getloadavg()[0]:.2f}"
    )


def memory_check(nginx, requests):
    record = measure([BENCH, "memory", "--url", nginx.base_url, "--requests", str(requests), "--warmup", "5000"])[0]
    growth = record["peak_growth_kib"]
    verdict = "under" if growth < 1024 else "OVER"
    return record, (
        f"Memory: {requests:,} signed requests in one process after 5,000 of warm-up: peak RSS grew "
        f"{growth:.0f} KiB ({verdict} the 1 MiB budget); RSS after warm-up {record['rss_after_warmup_kib'] / 1024:.1f} MiB, "
        f"at the end {record['rss_at_end_kib'] / 1024:.1f} MiB."
    )


def check_results(results, memory_record):
    problems = []
    for number, key, implementation, record in results:
        if record.get("errors", 0):
            problems.append(f"round {number} {key} {implementation}: {record['errors']} answers were not 200")
        if ((key == "storm" or key.startswith("process-storm")) and implementation == "swift-oauth2"
                and record.get("token_requests") != 1):
            problems.append(f"round {number}: the {key} made {record.get('token_requests')} token requests, not 1")
    if memory_record and memory_record.get("errors", 0):
        problems.append("memory check: some answers were not 200")
    return problems


# MARK: - Leak checks


def leak_checks(nginx):
    """valgrind memcheck and an AddressSanitizer (LeakSanitizer) build, each on a short run.

    valgrind 3.19 (Debian 12) dies with an internal error on any Swift program
    whose concurrency pool starts a thread; such a run is reported as not run,
    not as a pass, and LeakSanitizer is then the check that counts.
    """
    ok = True
    if shutil.which("valgrind") is None:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "valgrind"])
    # valgrind 3.19 cannot read the DWARF 5 the Swift toolchain writes: give it a copy without.
    stripped = os.path.join(BUILD, "oauth2-bench-stripped")
    shutil.copyfile(BENCH, stripped)
    os.chmod(stripped, 0o755)
    subprocess.run(["strip", "-g", stripped], check=False)
    for mode in (["sequential", "--requests", "300"], ["storm", "--callers", "100"]):
        command = ["valgrind", "--tool=memcheck", "--leak-check=full", "--errors-for-leak-kinds=definite",
                   "--error-exitcode=99", stripped] + [mode[0], "--url", nginx.base_url] + mode[1:]
        log("+ " + " ".join(command))
        result = subprocess.run(command, capture_output=True, text=True)
        if "ERROR SUMMARY" not in result.stderr:
            reason = next((line.split("== ", 1)[-1] for line in result.stderr.splitlines()
                           if "INTERNAL ERROR" in line or "debuginfo reader" in line or "can't recover" in line),
                          "no summary")
            version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
            print(f"valgrind memcheck, {mode[0]}: NOT RUN: {version} gave up on the program ({reason.strip()})")
            continue
        summary = [line.split("== ", 1)[-1] for line in result.stderr.splitlines()
                   if "definitely lost" in line or "indirectly lost" in line or "ERROR SUMMARY" in line]
        print(f"valgrind memcheck, {mode[0]}: exit {result.returncode}; " + "; ".join(summary))
        ok = ok and result.returncode == 0

    build(["-Xswiftc", "-sanitize=address"], scratch=ASAN_SCRATCH)
    binary = os.path.join(ASAN_SCRATCH, "release", "oauth2-bench")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:halt_on_error=1")
    for mode in (["sequential", "--requests", "2000"], ["concurrent", "--requests", "2000", "--concurrency", "8"],
                 ["sequential", "--requests", "2000", "--executor", "transport"],
                 ["concurrent", "--requests", "2000", "--concurrency", "8", "--executor", "transport"],
                 ["storm", "--callers", "200", "--token-log", nginx.token_log], ["parse", "--iterations", "2000"]):
        command = [binary, mode[0], "--url", nginx.base_url] + mode[1:]
        log("+ " + " ".join(command))
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        reported = "LeakSanitizer" in result.stderr or "AddressSanitizer" in result.stderr
        label = mode[0] + (" on the transport's executor" if "--executor" in mode else "")
        print(f"AddressSanitizer + LeakSanitizer, {label}: exit {result.returncode}, "
              + ("REPORTED:\n" + result.stderr[-4000:] if reported else "nothing reported"))
        ok = ok and result.returncode == 0 and not reported
    print("leak checks: " + ("passed" if ok else "FAILED"))
    return ok


# MARK: - Main


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=int(os.environ.get("N") or 20000),
                        help="signed GETs per scenario and round (default 20000, or $N)")
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS") or 7))
    parser.add_argument("--memory-requests", type=int, default=100000)
    parser.add_argument("--parse-iterations", type=int, default=100000)
    parser.add_argument("--storm-processes", type=int, default=8, help="processes in the refresh storm across processes")
    parser.add_argument("--storm-callers", type=int, default=10, help="concurrent callers in each of those processes")
    parser.add_argument("--start-runs", type=int, default=20, help="runs of each program per round for the start row")
    parser.add_argument("--cli", default="auto",
                        help="the start row's command-line tool: auto (build the main package's oauth2 in release), none, or a path")
    parser.add_argument("--pin-cpu", type=int, default=min(os.sched_getaffinity(0)),
                        help="the CPU of the one-CPU rows (nginx and the client both pinned to it)")
    parser.add_argument("--account-sizes", default="1,1000,10000", help="the per-account row's sizes")
    parser.add_argument("--account-iterations", type=int, default=50000, help="sends timed at each of those sizes")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument("--leaks", action="store_true", help="run the leak checks instead of the benchmarks")
    parser.add_argument("--results", default=os.path.join(BUILD, "results.jsonl"), help="where to keep every raw result")
    parser.add_argument("--base", default=os.environ.get("BASE") or None,
                        help="a revision to compare with, interleaved in the same rounds (or $BASE)")
    parser.add_argument("--only", choices=("requests", "whole-process", "dpop"), default=os.environ.get("ONLY") or None,
                        help="the request rows alone (in process and whole process), or the whole-process rows alone (or $ONLY)")
    parser.add_argument("--whole-process-runs", type=int, default=3,
                        help="hyperfine runs of each program per round in the whole-process rows (after one warm-up run)")
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("at least 3 rounds")

    ensure_dependencies()
    base = Base(args.base) if args.base and not args.leaks else None
    if not args.skip_build:
        build(only=args.only)
    elif not os.path.exists(GO_BENCH):
        build_go()
    if base:
        base.prepare(args.only)
    if args.leaks or args.only:
        cli = None
    elif args.skip_build and args.cli == "auto":
        cli = CLI_RELEASE if os.path.exists(CLI_RELEASE) else None
    else:
        cli = build_cli(args.cli)
    account_sizes = [int(size) for size in args.account_sizes.split(",")]
    nginx = Nginx()
    postgres = Postgres()
    stores = Stores(postgres)
    try:
        nginx.start()
        if args.leaks:
            return 0 if leak_checks(nginx) else 1
        if args.only is None:
            postgres.start()
        cli_env = None
        if cli:
            # A stored, valid token for the CLI's start-up row: one grant, then only reads.
            cli_env = cli_environment(nginx, os.path.join(stores.directory, "cli"))
            run([cli] + CLI_SEED, env=cli_env, stdout=subprocess.DEVNULL)
        machine = machine_description()
        started = time.monotonic()
        results = run_rounds(nginx, stores, args.requests, args.rounds, args.parse_iterations,
                             args.storm_processes, args.storm_callers, args.pin_cpu, args.start_runs,
                             cli, cli_env, account_sizes, args.account_iterations, args.only, base,
                             args.whole_process_runs)
        memory_record, memory_line = memory_check(nginx, args.memory_requests) if args.only is None else (None, None)
        elapsed = time.monotonic() - started
    finally:
        nginx.stop()
        postgres.stop()
        stores.remove()

    with open(args.results, "w") as out:
        for number, key, implementation, record in results:
            out.write(json.dumps(dict(record, round=number, key=key)) + "\n")
        if memory_record:
            out.write(json.dumps(dict(memory_record, key="memory")) + "\n")
    print()
    print(f"Machine: {machine}; load average at end {os.getloadavg()[0]:.2f}.")
    if args.only == "dpop":
        print(f"{args.parse_iterations:,} DPoP proofs per round (timed in batches of 100), then {args.requests:,} sequential "
              f"GETs each of libcurl, ours with a bearer token and ours DPoP-signed, {args.rounds} rounds; {elapsed:.0f} s.")
        print()
        print(table(results, args.rounds, args.only, base))
        return 1 if check_results(results, None) else 0
    parts = [f"{args.requests:,} signed GETs per scenario and round, {args.rounds} rounds, libcurl, swift-oauth2"
             + (f", {base.label}" if base else "") + ", Go" + ("" if args.only == "whole-process" else " and the hand-off floor")
             + " interleaved"]
    if args.only != "whole-process":
        parts.append(f"one-CPU rows on CPU {args.pin_cpu}")
    if args.only is None:
        parts.append(f"start row {args.start_runs} runs of each per round")
    parts.append(f"whole-process rows {args.whole_process_runs} runs of each per round after a warm-up; {elapsed:.0f} s.")
    print("; ".join(parts))
    print()
    print(table(results, args.rounds, args.only, base))
    if memory_line:
        print(memory_line)
    problems = check_results(results, memory_record)
    for problem in problems:
        print("FAILED: " + problem)
    print(f"Raw results: {os.path.relpath(args.results, ROOT)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
