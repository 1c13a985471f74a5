#!/usr/bin/env bash
# The Microsoft-Entra-and-Google-behaving test provider (Tests/EntraProvider/serve.py)
# on 127.0.0.1, for the issuer-rule tests of issue 39.
#
#   scripts/entra-provider.sh start | stop
#
# start: runs it with the local provider's venv (which has `cryptography`;
# scripts/provider-start.sh makes it), waits until it answers and prints the
# path of its env.json (.build/entra-provider/env.json). A provider already
# running is stopped first. stop: stops it (not running is not an error).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
run_dir="$repo_root/.build/entra-provider"
python="$repo_root/.build/provider/venv/bin/python"

# shellcheck source=lib/service.sh
. "$repo_root/scripts/lib/service.sh"

# Only the process that serves this run folder, never a reused pid: TERM, then KILL after 5 seconds.
stop() { service_stop "$run_dir" 'EntraProvider/serve\.py'; }

case "${1:-}" in
    start)
        stop
        if [ ! -x "$python" ]; then
            # The venv comes with the local provider; make it if it is missing.
            "$repo_root/scripts/provider-start.sh" --name entra-venv >/dev/null
            "$repo_root/scripts/provider-stop.sh" --name entra-venv >/dev/null
        fi
        mkdir -p "$run_dir"
        rm -f "$run_dir/env.json"
        "$python" "$repo_root/Tests/EntraProvider/serve.py" --run-dir "$run_dir" \
            >"$run_dir/stdout.log" 2>"$run_dir/server.log" </dev/null &
        echo $! >"$run_dir/pid"
        for _ in $(seq 100); do
            if [ -s "$run_dir/env.json" ]; then
                echo "$run_dir/env.json"
                exit 0
            fi
            service_alive "$(cat "$run_dir/pid")" || break
            sleep 0.1
        done
        echo "entra-provider: the provider did not start:" >&2
        tail -n 20 "$run_dir/server.log" >&2
        stop
        exit 1
        ;;
    stop) stop ;;
    *) sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 64 ;;
esac
