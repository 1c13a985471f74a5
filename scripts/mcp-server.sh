#!/usr/bin/env bash
# Starts or stops the MCP server of the MCP example's test (Tests/MCPServer):
# the official Python MCP SDK serving one tool on 127.0.0.1, protected by a
# local provider (scripts/provider-start.sh), which it asks about every token.
#
#   scripts/mcp-server.sh start [--name NAME] [--provider ENV_JSON] [--scope SCOPE]...
#   scripts/mcp-server.sh stop [--name NAME]
#
# NAME defaults to main, ENV_JSON to .build/provider/main/env.json (the provider
# `make test` starts), SCOPE to read. start installs the pinned SDK into
# .build/mcp/venv when missing, stops a server already running under NAME,
# starts a new one and returns once its RFC 9728 document answers; then
# .build/mcp/NAME/env.json describes it (url, resource, resource_metadata, pid)
# and its path is printed on stdout. If anything fails, nothing is left running.
# stop sends TERM, then KILL after 5 s; stopping one that is not running is not
# an error.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
server_src="$repo_root/Tests/MCPServer"
mcp_root="$repo_root/.build/mcp"
venv="$mcp_root/venv"

usage() {
    sed -n '5,6p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2
    exit 64
}
[ $# -ge 1 ] || usage
command="$1"
shift
name=main
provider="$repo_root/.build/provider/main/env.json"
scope_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --name) [ $# -ge 2 ] || usage; name="$2"; shift 2 ;;
        --provider) [ $# -ge 2 ] || usage; provider="$2"; shift 2 ;;
        --scope) [ $# -ge 2 ] || usage; scope_args+=(--scope "$2"); shift 2 ;;
        -h|--help) usage ;;
        *) echo "mcp-server: unknown argument: $1" >&2; usage ;;
    esac
done
if ! [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]] || [ "$name" = venv ]; then
    echo "mcp-server: --name must be letters, digits, '-' or '_' (and not 'venv')" >&2
    exit 64
fi
run_dir="$mcp_root/$name"

# True while pid runs; a zombie (killed, not yet reaped) has stopped.
alive() {
    local state
    state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)" || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# True when pid is this server for run_dir (not a reused process id).
is_server() {
    [ -r "/proc/$1/cmdline" ] || return 1
    tr '\0' '\n' <"/proc/$1/cmdline" | grep -qxF -- "$run_dir" &&
        tr '\0' '\n' <"/proc/$1/cmdline" | grep -q 'MCPServer/server\.py$'
}

stop_pid() {
    local pid="$1"
    kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while alive "$pid" && [ "$waited" -lt 50 ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
}

stop() {
    local pid_file="$run_dir/pid"
    [ -f "$pid_file" ] || return 0
    local pid
    pid="$(cat "$pid_file")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && is_server "$pid"; then
        stop_pid "$pid"
    fi
    rm -f "$pid_file"
}

case "$command" in
    stop) stop; exit 0 ;;
    start) ;;
    *) usage ;;
esac

if [ ! -f "$provider" ]; then
    echo "mcp-server: no provider at $provider (scripts/provider-start.sh starts one)" >&2
    exit 1
fi
mkdir -p "$mcp_root"

# --- The virtual environment, shared by every server; a lock and a stamp as in
# provider-start.sh.
ensure_venv() {
    local stamp="$venv/.mcp-requirements"
    local wanted
    wanted="$(sha256sum "$server_src/requirements.txt" | cut -d' ' -f1) $(python3 -c 'import sys; print(sys.version.split()[0])')"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && [ -x "$venv/bin/python" ]; then
        return 0
    fi
    echo "mcp-server: installing the MCP SDK into $venv" >&2
    rm -rf "$venv"
    local log="$mcp_root/pip.log"
    if ! python3 -m venv "$venv" >"$log" 2>&1 ||
        ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
            -r "$server_src/requirements.txt" >>"$log" 2>&1; then
        echo "mcp-server: installing the MCP SDK failed (python3 and python3-venv are needed):" >&2
        tail -n 20 "$log" >&2
        rm -rf "$venv"
        return 1
    fi
    echo "$wanted" >"$stamp"
}
(
    flock 9
    ensure_venv
) 9>"$mcp_root/venv.lock"

stop
rm -rf "$run_dir"
mkdir -p "$run_dir"

pid=""
cleanup_on_failure() {
    if [ -n "$pid" ] && alive "$pid"; then
        stop_pid "$pid"
    fi
    rm -f "$run_dir/pid"
}
trap 'cleanup_on_failure' EXIT
trap 'exit 130' INT TERM HUP

"$venv/bin/python" "$server_src/server.py" --provider-env "$provider" --run-dir "$run_dir" \
    ${scope_args[@]+"${scope_args[@]}"} </dev/null >"$run_dir/server.log" 2>&1 &
pid=$!
echo "$pid" >"$run_dir/pid"

fail() {
    echo "mcp-server: $1; the end of $run_dir/server.log:" >&2
    tail -n 20 "$run_dir/server.log" >&2
    exit 1
}

deadline=$((SECONDS + 60))
until [ -f "$run_dir/env.json" ]; do
    alive "$pid" || fail "the server exited during setup"
    [ "$SECONDS" -lt "$deadline" ] || fail "the server did not start within 60 seconds"
    sleep 0.1
done
"$venv/bin/python" - "$run_dir/env.json" <<'PY' || fail "the server does not answer"
import json, sys, time, urllib.request
url = json.load(open(sys.argv[1]))["resource_metadata"]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
deadline = time.monotonic() + 20
while True:
    try:
        with opener.open(url, timeout=5) as response:
            if response.status == 200:
                break
    except OSError as error:
        if time.monotonic() > deadline:
            sys.exit(f"mcp-server: {url}: {error}")
        time.sleep(0.1)
PY

trap - EXIT
echo "mcp-server: $name is serving $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$run_dir/env.json") (pid $pid)" >&2
echo "$run_dir/env.json"
