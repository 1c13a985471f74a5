#!/usr/bin/env bash
# Stops a local OAuth 2.0 provider started by scripts/provider-start.sh.
#
#   scripts/provider-stop.sh [--name NAME | --all]
#
# NAME defaults to main; --all stops every provider under .build/provider/.
# TERM first, KILL after 5 seconds. Stopping one that is not running is not an
# error. The run folder (and its server.log) stays for inspection.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
provider_root="$repo_root/.build/provider"

names=()
all=0
while [ $# -gt 0 ]; do
    case "$1" in
        --name) [ $# -ge 2 ] || { echo "provider-stop: --name needs a value" >&2; exit 64; }; names+=("$2"); shift 2 ;;
        --all) all=1; shift ;;
        -h|--help) sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^#  *//' >&2; exit 64 ;;
        *) echo "provider-stop: unknown argument: $1" >&2; exit 64 ;;
    esac
done
if [ "$all" = 1 ]; then
    names=()
    for pid_file in "$provider_root"/*/pid; do
        [ -f "$pid_file" ] || continue
        names+=("$(basename "$(dirname "$pid_file")")")
    done
elif [ "${#names[@]}" -eq 0 ]; then
    names=(main)
fi

# True when pid is a provider serving run_dir (not a reused process id).
is_provider() {
    local pid="$1" run_dir="$2"
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' '\n' <"/proc/$pid/cmdline" | grep -qxF -- "$run_dir" &&
        tr '\0' '\n' <"/proc/$pid/cmdline" | grep -q 'serve\.py$'
}

# True while pid runs; a zombie (killed, not yet reaped by its parent) has stopped.
alive() {
    local state
    state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)" || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

stop_one() {
    local name="$1"
    local run_dir="$provider_root/$name"
    local pid_file="$run_dir/pid"
    [ -f "$pid_file" ] || return 0
    local pid
    pid="$(cat "$pid_file")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && is_provider "$pid" "$run_dir"; then
        kill -TERM "$pid" 2>/dev/null || true
        local waited=0
        while alive "$pid" && [ "$waited" -lt 50 ]; do
            sleep 0.1
            waited=$((waited + 1))
        done
        if alive "$pid"; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
        echo "provider-stop: stopped $name (pid $pid)" >&2
    fi
    rm -f "$pid_file"
}

for name in ${names[@]+"${names[@]}"}; do
    if ! [[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_-]*$ ]]; then
        echo "provider-stop: not a provider name: $name" >&2
        exit 64
    fi
    stop_one "$name"
done
