#!/usr/bin/env bash
# Starts or stops the provider that behaves as Sign in with Apple does
# (Tests/AppleProvider/serve.py) on 127.0.0.1, for the integration tests.
#
#   scripts/apple-provider.sh [--name NAME] start [--boolean-claims]
#   scripts/apple-provider.sh [--name NAME] stop
#
# It runs in the local provider's virtual environment (scripts/provider-start.sh
# makes it: cryptography is all it needs). start makes a fresh run folder
# .build/apple-provider/NAME/ (default NAME: main) and returns when the server
# answers; env.json there describes it (issuer, endpoints, client id, team id,
# key id and the .p8 key file). On stdout: the path of env.json. stop is TERM,
# then KILL after 5 seconds; stopping one that is not running is not an error.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$repo_root/.build/apple-provider"
venv="$repo_root/.build/provider/venv"
name=main
usage() { sed -n '5,6p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 64; }
[ "${1:-}" = --name ] && { [ $# -ge 2 ] || usage; name="$2"; shift 2; }
[[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]] || usage
[ $# -ge 1 ] || usage
command="$1"; shift
run_dir="$root/$name"

# shellcheck source=lib/service.sh
. "$repo_root/scripts/lib/service.sh"

# Only the process that serves this run folder, never a reused pid: TERM, then KILL after 5 seconds.
stop() { service_stop "$run_dir" 'AppleProvider/serve\.py'; }

case "$command" in
    stop) stop ;;
    start)
        args=()
        while [ $# -gt 0 ]; do
            case "$1" in
                --boolean-claims) args+=("$1"); shift ;;
                *) usage ;;
            esac
        done
        if [ ! -x "$venv/bin/python" ]; then
            "$repo_root/scripts/provider-start.sh" --name apple-venv >/dev/null
            "$repo_root/scripts/provider-stop.sh" --name apple-venv >/dev/null
        fi
        stop
        rm -rf "$run_dir"
        mkdir -p "$run_dir"
        chmod 700 "$run_dir"
        "$venv/bin/python" "$repo_root/Tests/AppleProvider/serve.py" --run-dir "$run_dir" --name "$name" ${args[@]+"${args[@]}"} \
            </dev/null >"$run_dir/server.log" 2>&1 &
        pid=$!
        echo "$pid" >"$run_dir/pid"
        for _ in $(seq 300); do
            [ -f "$run_dir/env.json" ] && break
            service_alive "$pid" || { tail -n 20 "$run_dir/server.log" >&2; stop; exit 1; }
            sleep 0.1
        done
        [ -f "$run_dir/env.json" ] || { echo "apple-provider: no env.json after 30 s" >&2; tail -n 20 "$run_dir/server.log" >&2; stop; exit 1; }
        echo "apple-provider: $name is serving $(sed -n 's/.*"issuer": "\(.*\)".*/\1/p' "$run_dir/env.json") (pid $pid)" >&2
        echo "$run_dir/env.json"
        ;;
    *) usage ;;
esac
